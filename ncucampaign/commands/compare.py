"""`ncucampaign compare RUN_A RUN_B`: what changed between two runs of a campaign."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from ncucampaign.backends.systems import load_collected
from ncucampaign.commands.parts.command import Command
from ncucampaign.commands.parts.common import many_values
from ncucampaign.commands.parts.consoles import out_console
from ncucampaign.commands.reference import read_reference
from ncucampaign.errors import (
    EXIT_NOT_COMPARABLE,
    EXIT_OK,
    EXIT_TARGETS_FAILED,
    EnvironmentProblem,
    UsageError,
    plural,
    printable,
)
from ncucampaign.escaping import console_text
from ncucampaign.plan.share.text import short_names
from ncucampaign.results.gate.compare import Comparison, compare_runs
from ncucampaign.results.gate.folding import FOLD_AT, folded_lines
from ncucampaign.results.gate.report import gate_line, junit_xml, markdown
from ncucampaign.results.gate.tables import verdict_table
from ncucampaign.results.gate.verdicts import ALPHA, SIZE_THRESHOLD, THRESHOLD, Verdict
from ncucampaign.results.history.reference import as_manifest, file_name, gpu_model, not_comparable
from ncucampaign.results.reading.records import is_bare_report, report_run
from ncucampaign.results.reading.runs import LoadedRun, compared
from ncucampaign.results.tables.tables import comparison_json, comparison_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", metavar="RUN_A", help="the run before (with --reference: the run to judge)")
    parser.add_argument("run_b", metavar="RUN_B", nargs="?", help="the run after")
    parser.add_argument(
        "--reference",
        metavar="DIR",
        help="judge RUN_A against the reference of its GPU model in DIR (`reference update` writes it), "
        f"as against a run A; exit {EXIT_NOT_COMPARABLE} when it is of another ncu, driver or clock setting",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=THRESHOLD * 100,
        metavar="PERCENT",
        help="the practical threshold: a duration is SLOWER or FASTER only when it moved at least this much "
        f"(and significantly); values beyond it are flagged (default {THRESHOLD * 100:g})",
    )
    parser.add_argument(
        "--size-threshold",
        type=float,
        default=SIZE_THRESHOLD * 100,
        metavar="PERCENT",
        help="with fewer samples than the rank test needs (one a side: no `samples:`), a duration that moved "
        f"at least this much is SLOWER or FASTER by size alone (default {SIZE_THRESHOLD * 100:g})",
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
    add_report_options(parser)


def add_report_options(parser: argparse.ArgumentParser) -> None:
    """--junit and --markdown, for compare and ab."""
    parser.add_argument(
        "--junit", metavar="FILE", help="write the verdicts as JUnit XML (a failure per verdict the gate fails on)"
    )
    parser.add_argument(
        "--markdown", metavar="FILE", help="write a Markdown summary (a CI job's page, e.g. $GITHUB_STEP_SUMMARY)"
    )
    parser.add_argument(
        "--json", metavar="FILE", dest="json_file", help="write the verdicts as JSON (as --format json prints them)"
    )


def write_reports(
    args: argparse.Namespace, comparison: Comparison, title: str, more: Mapping[str, object] | None = None
) -> None:
    """The --junit, --markdown and --json files, each replaced whole (--markdown appends to an existing file
    that is not ours to replace, like $GITHUB_STEP_SUMMARY); `more`: the command's own JSON fields."""
    if args.json_file:
        _write(Path(args.json_file), comparison_json(comparison, args.strict, more), append=False)
    if args.junit:
        _write(Path(args.junit), junit_xml(comparison, args.strict, title), append=False)
    if args.markdown:
        enforced = getattr(args, "fail_on_regression", True)  # ab's gate is always on
        _write(Path(args.markdown), markdown(comparison, args.strict, title, enforced), append=True)


def _write(path: Path, text: str, append: bool) -> None:
    try:
        with open(path, "a" if append else "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write {path}: {exc.strerror or exc}") from None


@many_values()
def run(args: argparse.Namespace) -> int:
    if args.threshold < 0 or args.size_threshold < 0:
        raise UsageError("--threshold and --size-threshold must not be negative")
    if args.reference is not None:
        if args.run_b is not None:
            raise UsageError("compare RUN --reference DIR judges one run: drop RUN_B, or --reference")
        return against_reference(args)
    if args.run_b is None:
        raise UsageError("compare needs RUN_A and RUN_B (or RUN --reference DIR)")
    run_a = compared(run_or_report(args.run_a))  # Slurm runs: collected first
    # A run against itself (an A/A check) is read once: 20,000 targets held twice took 1.35 GB
    same = Path(args.run_a).resolve() == Path(args.run_b).resolve()
    run_b = run_a if same else run_or_report(args.run_b)
    return decided(args, run_a, run_b, frozenset())


def run_or_report(given: str) -> LoadedRun:
    """A run directory, or a report someone sent as a run of one target (two reports: one target's two sides)."""
    return report_run(Path(given)) if is_bare_report(Path(given)) else load_collected(given)


def against_reference(args: argparse.Namespace) -> int:
    """compare RUN --reference DIR: the reference of the run's GPU model as its A side."""
    run = load_collected(args.run_a)
    folder, model = Path(args.reference), gpu_model(run.manifest)
    path = folder / file_name(model)
    if not path.is_file():
        there = sorted(p.name for p in folder.glob("*.yaml")) if folder.is_dir() else []
        raise UsageError(f"{folder}: no reference for {model} ({path.name}); there: {', '.join(there) or 'none'}")
    reference = read_reference(path)
    why = not_comparable(reference, run.manifest)
    if why is not None:
        print(f"not comparable: {printable(why)} ({path}); update the reference on this setting", file=sys.stderr)
        return EXIT_NOT_COMPARABLE
    excused = frozenset(n for n, t in reference.targets.items() if t.xfail or t.gate == "soft")
    try:
        as_run = as_manifest(reference, run.manifest)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # pydantic's ValidationError is a ValueError
        why = printable(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        raise UsageError(f"{path}: not a valid reference ({why}); write it again with `reference update`") from None
    return decided(args, LoadedRun(path, as_run), run, excused)


def decided(args: argparse.Namespace, run_a: LoadedRun, run_b: LoadedRun, excused: frozenset[str]) -> int:
    """The comparison of A and B, printed and reported, and the exit the gate gives."""
    threshold = args.threshold / 100
    comparison = compare_runs(
        run_a.manifest, run_b.manifest, threshold, args.metric, (threshold, ALPHA, args.size_threshold / 100)
    )
    comparison = dataclasses.replace(comparison, excused=excused)
    write_reports(args, comparison, "ncucampaign compare")
    if args.format == "json":
        sys.stdout.write(comparison_json(comparison, args.strict))
    else:
        how = (args.all, args.wide, args.strict)
        print_comparison(run_a, run_b, comparison, threshold, how, args.fail_on_regression)
    return EXIT_TARGETS_FAILED if args.fail_on_regression and comparison.failed(args.strict) else EXIT_OK


shown = console_text  # a value from a manifest as rich prints it: no markup, no control characters


def print_comparison(
    run_a: LoadedRun,
    run_b: LoadedRun,
    comparison: Comparison,
    threshold: float,
    how: tuple[bool, bool, bool],
    enforced: bool,
) -> None:
    """`how`: every row (--all), whole kernel names (--wide), --strict."""
    every, wide, strict = how
    console = out_console()
    console.print(f"A: {run_a.root}\nB: {run_b.root}")
    for note in folded_lines(comparison.notes):
        console.print(shown(note), style="yellow" if note.startswith("warning") else None)
    for side, names in (("A", comparison.only_in_a), ("B", comparison.only_in_b)):
        for line in names if len(names) < FOLD_AT else [short_names(names)]:
            console.print(f"only in {side}: {shown(line)}")
    console.print(comparison_table(comparison, threshold, every, wide))
    for finding in folded_lines(comparison.findings_appeared):
        console.print(f"finding appeared in B: {shown(finding)}")
    for finding in folded_lines(comparison.findings_disappeared):
        console.print(f"finding gone in B: {shown(finding)}")
    flagged = sum(1 for change in comparison.changes if change.flagged)
    counted = f"{plural(len(comparison.changes), 'value')} compared, {flagged} flagged; "
    print_verdicts(comparison, every, strict, counted, enforced)


def print_verdicts(comparison: Comparison, every: bool, strict: bool, prefix: str = "", enforced: bool = True) -> None:
    """The verdict table, the problems a gate fails on, one line of counts, and last the gate's outcome and why."""
    console = out_console()
    if comparison.verdicts:
        console.print(verdict_table(comparison.verdicts, every))
    for problem in folded_lines(comparison.problems):
        console.print(f"problem: {shown(problem)}", style="bold red")
    counts = Counter(v.verdict.value for v in comparison.verdicts)
    verdicts = ", ".join(f"{counts[v.value]} {v.value}" for v in Verdict if counts[v.value]) or "no verdict"
    console.print(f"{prefix}verdicts: {verdicts}; {plural(len(comparison.problems), 'problem')}")
    failing = comparison.failed(strict) and enforced
    console.print(shown(gate_line(comparison, strict, enforced)), style="bold red" if failing else None)


COMMAND = Command("compare", "what changed between two runs of a campaign", add_arguments, run)
