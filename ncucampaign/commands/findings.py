"""`ncucampaign findings RUN_DIR|REPORT`: ncu's own rule results across the campaign, ranked."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import textwrap
from pathlib import Path

from ncucampaign.backends.systems import load_collected
from ncucampaign.commands.parts.command import Command
from ncucampaign.errors import EXIT_OK, EXIT_USAGE, UsageError, printable
from ncucampaign.results.findings import (
    finding_data,
    findings_of,
    group_text,
    is_report_path,
    rank,
    shares_of_shown,
)
from ncucampaign.results.reading.runs import LoadedRun
from ncucampaign.results.weights import gpu_time_summary, kernel_names, shares_by_kernel


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="RUN_DIR|REPORT", help="a run directory (or its campaign's folder) or a report")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--top", type=int, default=None, metavar="N", help="only the N first findings")
    parser.add_argument("--all", action="store_true", help="also ncu's informative (OK) messages")
    parser.add_argument("--ncu", default=None, help="the ncu whose report reader to use (default: the wheel)")


def run_charts(run: LoadedRun) -> dict[tuple[str, int], object]:
    """Each result's chart numbers (load_run's charts(), less what the occurrence already says)."""
    said = ("target", "result", "kernel", "gpu_time_share")
    return {
        (str(c["target"]), int(c["result"])): {k: v for k, v in c.items() if k not in said}  # type: ignore[call-overload]
        for c in run.charts()
    }


def nothing_found(run: LoadedRun | None, unreadable: list[str], every: bool) -> str:
    """Why there is no finding to show: no report to read (what became of the targets), or none that
    could be read, or ncu's rules found nothing."""
    if run is not None and not any(record.report for record in run.manifest.targets):
        statuses = ", ".join(f"{n} {status}" for status, n in sorted(run.manifest.counts().items()))
        return f"no findings: no target of this run has a report to read ({statuses or 'no target'})"
    if unreadable:
        return "no findings: ncu's rules of the reports that could be read reported nothing to act on"
    return "no findings: ncu's rules reported nothing to act on" + ("" if every else " (see --all)")


def run(args: argparse.Namespace) -> int:
    if args.top is not None and args.top < 1:
        raise UsageError("--top must be at least 1")
    path = Path(args.path)
    run = None if is_report_path(path) else load_collected(path)  # a Slurm run: its tasks' records first
    read = findings_of(path, args.ncu, run)
    shares = shares_by_kernel(run.manifest) if run is not None else None
    names = kernel_names(run.manifest) if run is not None else None
    groups = rank(read.found, include_ok=args.all, shares=shares, names=names)[: args.top]
    for problem in read.unreadable:
        print(f"ncucampaign: error: {printable(problem)}", file=sys.stderr)
    # An unreadable report is not "nothing to fix": the exit status says so, as summarize's does.
    status = EXIT_USAGE if read.unreadable else EXIT_OK
    if args.format == "json":
        for note in read.unread:
            print(f"ncucampaign: note: {printable(note)}", file=sys.stderr)
        charts = run_charts(run) if run is not None else None
        print(json.dumps([finding_data(group, charts) for group in groups], indent=2))
        return status
    if not groups:
        print(nothing_found(run, read.unreadable, args.all))
        _not_findings(read.unread)
        return status
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    if run is not None:
        print(fitted(printable(gpu_time_summary(run.manifest)), width))
        held = shares_of_shown(groups)
        if held is not None:
            print(f"the kernels below hold {100 * held:.1f}% of the application's GPU time")
    for position, group in enumerate(groups, 1):
        print(fitted(printable("\n".join(group_text(position, group)), keep_newlines=True), width))
    _not_findings(read.unread)
    return status


def _not_findings(notes: list[str]) -> None:
    """What kept ncu's rules from running (a result whose collection failed: every rule errs on it), after the
    findings and apart from them: they are no findings, and printed first they read as the top ones."""
    if notes:
        print("\nnot findings: what ncu's rules could not judge")
        print("\n".join(f"   {printable(note)}" for note in notes))


_LEAD = re.compile(r" *(?:\d+\. )?")


def fitted(text: str, width: int | None) -> str:
    """On a terminal (`width`), each line wrapped under its own indent: ncu's messages run to 700 characters,
    and a terminal's own wrapping starts them at column 0. Piped (None), one line each, for grep."""
    if width is None:
        return text
    lines = []
    for line in text.splitlines():
        # under its text: a numbered title's after its number, any other line at its own indent
        lead = _LEAD.match(line)
        indent = " " * (lead.end() if lead else 0)
        wrapper = _NameWrapper(max(width - 1, 40), subsequent_indent=indent or "  ", break_on_hyphens=False)
        lines += wrapper.wrap(line) or [line]
    return "\n".join(lines)


class _NameWrapper(textwrap.TextWrapper):
    """A word longer than a line (a kernel's name: cuDNN's run past 100 characters) is broken after its last `_`,
    `,` or `>` that fits, where a reader looks for a joint, not at whatever column the line ends."""

    def _handle_long_word(self, chunks: list[str], line: list[str], length: int, width: int) -> None:
        chunk, left = chunks[-1], max(width - length, 1)
        if line and left < width // 2:
            return  # the line ends here and the name starts the next one, whole up to its first joint
        joint = max(chunk.rfind(mark, 0, left) for mark in "_,>") + 1
        if joint <= left // 3:  # none, or so early that the line would stand mostly empty
            super()._handle_long_word(chunks, line, length, width)
            return
        line.append(chunk[:joint])
        chunks[-1] = chunk[joint:]


COMMAND = Command(
    "findings", "ncu's rule results (what to fix first) across a run or in one report, ranked", add_arguments, run
)
