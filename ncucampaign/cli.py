"""The command table, and the mapping of errors to exit codes. Each command lives in
`ncucampaign.commands.<name>` with `add_parser` and `run`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ncucampaign import __version__
from ncucampaign.commands import compare, discover, plan, report, run, schema, summarize, validate
from ncucampaign.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, CampaignError, NcuCampaignError

COMMANDS = (validate, plan, run, discover, summarize, compare, report, schema)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ncucampaign",
        description="Validate, plan and run Nsight Compute (ncu) profiling campaigns.",
        epilog="Exit codes: 0 ok, 1 some target failed, 2 usage or campaign error, 3 environment problem, "
        "130 interrupted, 70 internal error.",
    )
    parser.add_argument("--version", action="version", version=f"ncucampaign {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except CampaignError as exc:
        print(exc, file=sys.stderr)
        return exc.exit_code
    except NcuCampaignError as exc:
        print(f"ncucampaign: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("ncucampaign: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if os.environ.get("NCUCAMPAIGN_DEBUG"):
            raise
        print(
            f"ncucampaign: internal error (a bug, please report it): {type(exc).__name__}: {exc}\n"
            "Set NCUCAMPAIGN_DEBUG=1 to see the traceback.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
