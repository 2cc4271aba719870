"""`ncucampaign history RUNS... | --runs-root DIR`: every target's metric across runs, ordered by the
workload's first-parent commits (else by time), and where it changed (results/history/changes.py)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ncucampaign.backends.systems import load_collected
from ncucampaign.commands.parts.command import Command
from ncucampaign.commands.parts.common import many_values
from ncucampaign.commands.parts.consoles import out_console
from ncucampaign.errors import EXIT_OK, EXIT_TARGETS_FAILED, UsageError, plural, printable
from ncucampaign.escaping import console_text, csv_text
from ncucampaign.execute.process.short import probed
from ncucampaign.execute.rundir.store import MANIFEST, write_text_atomic
from ncucampaign.results.gate.folding import LISTED
from ncucampaign.results.history.series import (
    RunDigest,
    Series,
    bisect_hint,
    change_text,
    commit_of,
    digest,
    series_of,
    where,
)
from ncucampaign.results.page.history_page import history_page

FAILING = ("SLOWER", "CHANGED")  # what --fail-on-regression fails on, as the newest confirmed change


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="*", metavar="RUN", help="run directories of one campaign")
    parser.add_argument("--runs-root", metavar="DIR", help="every run under DIR (a campaign's runs folder)")
    parser.add_argument("--metric", action="append", default=[], metavar="NAME", help="a metric more (repeatable)")
    parser.add_argument("--format", choices=("text", "csv", "json"), default="text")
    parser.add_argument("--all", action="store_true", help=f"list every change (default: the {LISTED} largest)")
    parser.add_argument("--html", metavar="FILE", help="write one self-contained page: a chart per target")
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when a series' newest confirmed change is SLOWER or CHANGED",
    )


@many_values()
def run(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.runs]
    if args.runs_root:
        paths += sorted(p.parent for p in Path(args.runs_root).glob(f"*/{MANIFEST}") if not p.parent.is_symlink())
    if len(paths) < 2:
        raise UsageError("history needs two runs at least (RUN... or --runs-root DIR)")
    # Each run read, its numbers kept, and the run let go before the next: memory holds one run at a time.
    manifests = [digest(load_collected(path).manifest, args.metric) for path in dict.fromkeys(paths)]
    names = sorted({m.campaign for m in manifests})
    if len(names) > 1:
        raise UsageError(f"the runs are of {len(names)} campaigns ({', '.join(map(printable, names))}): one at a time")
    order = first_parent_order(manifests)
    manifests.sort(key=lambda m: (order.get(commit_of(m) or "", -1) if order else -1, m.started_at, m.run_id))
    series = series_of(manifests, args.metric)
    if args.html:  # through the store's atomic write: never through a link, never half a page
        write_text_atomic(Path(args.html), history_page(f"{names[0]}: history", series, [m.run_id for m in manifests]))
        print(f"history: page written to {printable(args.html)}", file=sys.stderr)  # stdout stays the --format
    if args.format == "json":
        print(json.dumps(as_json(series, order), indent=2))
    elif args.format == "csv":
        sys.stdout.write(as_csv(series))
    else:
        print_changes(series, order, len(manifests), args.all)
    failing = [s for s in series if s.newest is not None and s.newest.verdict in FAILING]
    return EXIT_TARGETS_FAILED if args.fail_on_regression and failing else EXIT_OK


def first_parent_order(manifests: list[RunDigest]) -> dict[str, int]:
    """Commit -> its position on the workload's first-parent line (oldest 0); {} when a run's commit
    is unknown or not on that line (then runs are ordered by time)."""
    git = next((m.workload_git for m in reversed(manifests) if m.workload_git is not None), None)
    if git is None or any(commit_of(m) is None for m in manifests):
        return {}
    done = probed(["git", "-C", git.root, "rev-list", "--first-parent", "HEAD"], 60)
    line = done.text.split() if done.ok else []
    order = {commit: i for i, commit in enumerate(reversed(line))}
    return order if all(commit_of(m) in order for m in manifests) else {}


def print_changes(series: list[Series], order: dict[str, int], runs: int, every: bool = False) -> None:
    """The changes, largest first, at most LISTED of them (`every`: all; 20,000 series where every value moved were
    160,000 lines, 29 s of printing), then how many more; and where a series' setting changed."""
    console = out_console()
    how = "by the workload's first-parent commits" if order else "by time (commits unknown or not on one line)"
    console.print(f"{plural(runs, 'run')}, {len(series)} series, ordered {how}", highlight=False)
    found = [(s, change) for s in series for change in s.changes]
    found.sort(key=lambda pair: -abs(pair[1].shift) if pair[1].shift is not None else 0.0)
    for s, change in found[: None if every else LISTED]:
        hint = bisect_hint(s, change, order)
        console.print(console_text(change_text(s, change)), highlight=False)
        if hint:  # a line of its own (printable would write the newline as an escape)
            console.print(console_text(f"  {hint}"), highlight=False)
    markers = [(s, at) for s in series for at in s.markers]
    for s, at in markers[: None if every else LISTED]:
        console.print(console_text(f"{s.target} {s.metric}: new setting at {where(s, at)}"), highlight=False)
    left = 0 if every else max(0, len(found) - LISTED) + max(0, len(markers) - LISTED)
    if left:
        changed = len({(s.target, s.metric) for s, _ in found})
        console.print(
            f"... and {left} more (changes in {changed} series in all): --all or --format csv or json lists every "
            "one, --html charts them",
            highlight=False,
        )
    if not found:
        console.print("no change found", highlight=False)


def as_json(series: list[Series], order: dict[str, int]) -> list[dict[str, object]]:
    return [
        {
            "target": s.target,
            "metric": s.metric,
            "unit": s.unit,
            "points": [
                {"run": p.run, "commit": p.commit, "setting": list(p.setting), "samples": list(p.samples)}
                for p in s.points
            ],
            "changes": [
                {
                    "run": s.points[c.at].run,
                    "commit": s.points[c.at].commit,
                    "verdict": c.verdict,
                    "shift": c.shift,
                    "p_value": c.p_value,
                    "bisect": bisect_hint(s, c, order),
                }
                for c in s.changes
            ],
            "markers": [s.points[i].run for i in s.markers],
        }
        for s in series
    ]


def as_csv(series: list[Series]) -> str:
    """One row a point, the median in the unit its column names (escaped as summarize's CSV is)."""
    header = ["target", "metric", "run", "commit", "gpu", "ncu", "clock_control", "samples", "median", "unit", "change"]
    rows: list[Sequence[object]] = [header]
    for s in series:
        changed = {c.at: c.verdict for c in s.changes}
        for i, p in enumerate(s.points):
            where = [s.target, s.metric, p.run, p.commit or "", *p.setting]
            rows.append([*where, len(p.samples), p.median, s.unit, changed.get(i, "")])
    return csv_text(rows)


COMMAND = Command("history", "each target's metrics across runs, and the commit where they changed", add_arguments, run)
