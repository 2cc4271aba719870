"""`ncucampaign compare RUN_A RUN_B`: what changed between two runs of a campaign."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from rich.markup import escape

from ncucampaign.commands.common import out_console, reading_runs
from ncucampaign.commands.slurm_common import load_collected
from ncucampaign.errors import EXIT_OK, EXIT_TARGETS_FAILED, UsageError, plural, printable
from ncucampaign.results.compare import Comparison, compare_runs
from ncucampaign.results.gate_tables import verdict_table
from ncucampaign.results.runs import LoadedRun
from ncucampaign.results.tables import comparison_json, comparison_table
from ncucampaign.results.verdicts import ALPHA, THRESHOLD, Verdict


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("compare", help="what changed between two runs of a campaign")
    parser.add_argument("run_a", metavar="RUN_A")
    parser.add_argument("run_b", metavar="RUN_B")
    parser.add_argument(
        "--threshold",
        type=float,
        default=THRESHOLD * 100,
        metavar="PERCENT",
        help="the practical threshold: a duration is SLOWER or FASTER only when it moved at least this much "
        f"(and significantly); values beyond it are flagged (default {THRESHOLD * 100:g})",
    )
    parser.add_argument(
        "--metric", action="append", default=[], metavar="NAME", help="compare this ncu metric too (repeatable)"
    )
    parser.add_argument("--all", action="store_true", help="show every metric, not only flagged changes")
    parser.add_argument("--wide", action="store_true", help="whole kernel names (default: long ones shortened)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 on a SLOWER verdict, a target ok in A that is not ok (or missing) in B, nothing compared, "
        "or a --metric in neither run (for CI); never on AMBIGUOUS or CHANGED without --strict",
    )
    parser.add_argument(
        "--strict", action="store_true", help="with --fail-on-regression: AMBIGUOUS and CHANGED verdicts fail too"
    )
    parser.set_defaults(handler=run)


@reading_runs()
def run(args: argparse.Namespace) -> int:
    if args.threshold < 0:
        raise UsageError("--threshold must not be negative")
    run_a, run_b = load_collected(args.run_a), load_collected(args.run_b)  # Slurm runs: collected first
    threshold = args.threshold / 100
    comparison = compare_runs(run_a.manifest, run_b.manifest, threshold, args.metric, (threshold, ALPHA))
    if args.format == "json":
        sys.stdout.write(comparison_json(comparison, args.strict))
    else:
        print_comparison(run_a, run_b, comparison, threshold, args.all, args.wide)
    return EXIT_TARGETS_FAILED if args.fail_on_regression and comparison.failed(args.strict) else EXIT_OK


def shown(text: str) -> str:
    """A value from a manifest as rich prints it: no markup, no control characters."""
    return escape(printable(text))


def print_comparison(
    run_a: LoadedRun, run_b: LoadedRun, comparison: Comparison, threshold: float, every: bool, wide: bool = False
) -> None:
    console = out_console()
    console.print(f"A: {run_a.root}\nB: {run_b.root}")
    for note in comparison.notes:
        console.print(shown(note), style="yellow" if note.startswith("warning") else None)
    for name in comparison.only_in_a:
        console.print(f"only in A: {shown(name)}")
    for name in comparison.only_in_b:
        console.print(f"only in B: {shown(name)}")
    console.print(comparison_table(comparison, threshold, every, wide))
    for finding in comparison.findings_appeared:
        console.print(f"finding appeared in B: {shown(finding)}")
    for finding in comparison.findings_disappeared:
        console.print(f"finding gone in B: {shown(finding)}")
    flagged = sum(1 for change in comparison.changes if change.flagged)
    print_verdicts(comparison, every, f"{plural(len(comparison.changes), 'value')} compared, {flagged} flagged; ")


def print_verdicts(comparison: Comparison, every: bool, prefix: str = "") -> None:
    """The verdict table, the problems a gate fails on, and one line of counts."""
    console = out_console()
    if comparison.verdicts:
        console.print(verdict_table(comparison.verdicts, every))
    for problem in comparison.problems:
        console.print(f"problem: {shown(problem)}", style="bold red")
    counts = Counter(v.verdict.value for v in comparison.verdicts)
    verdicts = ", ".join(f"{counts[v.value]} {v.value}" for v in Verdict if counts[v.value]) or "no verdict"
    console.print(f"{prefix}verdicts: {verdicts}; {plural(len(comparison.problems), 'problem')}")
