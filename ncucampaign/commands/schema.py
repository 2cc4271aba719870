"""`ncucampaign schema [--manifest]`: print a JSON Schema (schemas/ holds these, committed)."""

from __future__ import annotations

import argparse
import sys

from ncucampaign.commands.parts.command import Command
from ncucampaign.errors import EXIT_OK
from ncucampaign.execute.rundir.manifest import manifest_schema
from ncucampaign.spec.schema import campaign_schema, render


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--manifest", action="store_true", help="the schema of manifest.json instead")


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(render(manifest_schema() if args.manifest else campaign_schema()))
    return EXIT_OK


COMMAND = Command("schema", "print the JSON Schema of campaign files (or of manifests)", add_arguments, run)
