"""`ncucampaign summarize RUN_DIR|REPORT...`: what each target measured, from manifests or reports."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.text import Text

from ncucampaign.backends.systems import load_collected
from ncucampaign.commands.parts.command import Command
from ncucampaign.commands.parts.common import many_values
from ncucampaign.commands.parts.consoles import PipedConsole, out_console
from ncucampaign.errors import EXIT_OK, UsageError, printable
from ncucampaign.execute.rundir.manifest import TargetRecord
from ncucampaign.results.gate.samples import sample_summary
from ncucampaign.results.reading.records import is_bare_report, report_record
from ncucampaign.results.reading.runs import run_rows, tidy_rows
from ncucampaign.results.run_summary import FOLD_AT
from ncucampaign.results.tables.tables import tidy_csv, tidy_json
from ncucampaign.results.tables.target_tables import rows_table, rows_text, target_table, target_text, targets_rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR|REPORT", help="run directories or .ncu-rep/.ncu-repz files")
    parser.add_argument(
        "--format",
        choices=("text", "csv", "json"),
        default="text",
        help="csv/json: one row per result and metric, for pandas or spreadsheets",
    )
    parser.add_argument("--wide", action="store_true", help="whole kernel names (default: long ones shortened)")
    parser.add_argument(
        "--all", action="store_true", help=f"a table for each target (over {FOLD_AT} targets: one table, a row each)"
    )
    parser.add_argument("--target", nargs="+", metavar="NAME", help="only these targets, each with its own table")
    parser.add_argument(
        "--all-metrics",
        action="store_true",
        help="a column for every recorded metric (default: the standard ones and the campaign's `metrics:`)",
    )


@many_values()
def run(args: argparse.Namespace) -> int:
    console = out_console()
    # Plain text for files and pipes, and for --wide (every column and whole names, in lines as long
    # as they need, also on a terminal); rich's tables only where the terminal's width matters.
    plain = args.wide or isinstance(console, PipedConsole)

    def show(run_id: str, record: TargetRecord) -> None:
        if plain:
            sys.stdout.write(target_text(run_id, record, args.wide, args.all_metrics))
        else:
            console.print(target_table(run_id, record, args.wide, console.width, args.all_metrics))
        summary = sample_summary(record)
        if summary is not None and plain:  # the samples compare decides on (docs/results.md, "compare")
            sys.stdout.write(printable(summary) + "\n")
        elif summary is not None:
            console.print(Text(printable(summary)))

    rows: list[dict[str, object]] = []
    for given in args.runs:
        path = Path(given)
        if is_bare_report(path):
            record = report_record(path)
            if args.format == "text":
                show(path.name, record)
            else:
                rows += tidy_rows("", record.name, "", record.results)
            continue
        loaded = load_collected(path)
        records = chosen(loaded.manifest.targets, args.target, path)
        if args.format == "text" and len(records) > FOLD_AT and not args.all and not args.target:
            found = targets_rows(loaded.manifest.run_id, records, args.wide)
            if plain:
                sys.stdout.write(rows_text(found))
            else:
                console.print(rows_table(found, args.wide, console.width))
        elif args.format == "text":
            for record in records:
                show(loaded.manifest.run_id, record)
        else:
            rows += run_rows(loaded) if not args.target else [r for r in run_rows(loaded) if r["target"] in args.target]
    if args.format == "csv":
        sys.stdout.write(tidy_csv(rows))
    elif args.format == "json":
        sys.stdout.write(tidy_json(rows))
    return EXIT_OK


def chosen(records: list[TargetRecord], names: list[str] | None, path: Path) -> list[TargetRecord]:
    """The records `--target` names (all without it); a name the run does not hold is a usage error."""
    if not names:
        return records
    unknown = sorted(set(names) - {record.name for record in records})
    if unknown:
        raise UsageError(f"--target: no target {printable(unknown[0])} in {printable(str(path))}")
    return [record for record in records if record.name in names]


COMMAND = Command("summarize", "what each target measured (from the manifest or reports)", add_arguments, run)
