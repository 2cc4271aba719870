"""`ncucampaign export RUN_DIR`: the own report of each target read out of a large shared run's report
(execute/shared/read_out.py), written on demand with the split command the run recorded."""

from __future__ import annotations

import argparse
import sys

from ncucampaign.commands.parts.command import Command
from ncucampaign.commands.parts.common import chosen_ncu
from ncucampaign.errors import EXIT_OK, EXIT_TARGETS_FAILED, UsageError, printable
from ncucampaign.execute.prepare import resolve_ncu
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.shared.read_out import export_own
from ncucampaign.plan.expand import matching
from ncucampaign.results.reading.runs import load_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN_DIR")
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="TARGET",
        default=None,
        help="these targets, or shell-style patterns (default: all)",
    )
    parser.add_argument(
        "--ncu",
        default=None,
        help="the ncu to export with (default: $NCUCAMPAIGN_NCU, else ncu on PATH; never one the run directory names)",
    )


def run(args: argparse.Namespace) -> int:
    loaded = load_run(args.run)
    records = [r for r in loaded.manifest.targets if r.report is not None and r.report.ids is not None]
    if args.only:
        try:
            chosen = matching(args.only, [r.name for r in loaded.manifest.targets])
        except KeyError as exc:
            raise UsageError(f"--only: no target {printable(exc.args[0])} in {loaded.root}") from None
        records = [r for r in records if r.name in chosen]
    if not records:
        print(f"nothing to export: no target {'named' if args.only else 'of this run'} was read out of a shared report")
        return EXIT_OK
    failed = 0
    ncu = resolve_ncu(chosen_ncu(args.ncu) or "ncu")  # this machine's: a run directory names no program to run
    for written, why in export_own(RunStore.open(loaded.root), records, ncu):
        if why is None:
            print(written)
        else:
            failed += 1
            print(f"ncucampaign: {printable(written)}: not exported: {printable(why)}", file=sys.stderr)
    return EXIT_TARGETS_FAILED if failed else EXIT_OK


COMMAND = Command("export", "write own reports of the targets read out of a shared report", add_arguments, run)
