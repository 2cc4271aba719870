"""`ncucampaign report RUN_DIR`: one self-contained HTML page for a run."""

from __future__ import annotations

import argparse
from pathlib import Path

from ncucampaign.errors import EXIT_OK
from ncucampaign.results.html import write_report
from ncucampaign.results.runs import load_run


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("report", help="write one self-contained HTML page for a run")
    parser.add_argument("run", metavar="RUN_DIR")
    parser.add_argument("-o", "--output", metavar="FILE", help="default: RUN_DIR/report.html")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print(write_report(load_run(args.run), Path(args.output) if args.output else None))
    return EXIT_OK
