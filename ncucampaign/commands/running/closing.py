"""What `run` shows once its backend is done: a run's table, its tally and the lines it ends with (at any size: over
FOLD_AT targets the table shows those not ok, and a cause that closed several targets is said once), or what was
submitted (and, with --wait, the submission followed until it ends)."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from ncucampaign.backends.contract import Started
from ncucampaign.commands.parts.consoles import out_console
from ncucampaign.commands.parts.progress import final_table, left_out_line
from ncucampaign.commands.running.batch import batch_own_line, wait
from ncucampaign.commands.running.steps import samples_short
from ncucampaign.errors import EXIT_OK
from ncucampaign.execute.prepare import RunSettings
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.limits import over_limit_note
from ncucampaign.execute.rundir.manifest import Manifest
from ncucampaign.own_time import since_process_start
from ncucampaign.plan.expand import Plan
from ncucampaign.results.limit import limit_line
from ncucampaign.results.run_summary import causes, own_time_line, tally_line
from ncucampaign.results.sharing import sharing_breakdown
from ncucampaign.results.weights import gpu_time_line


def show(started: Started, plan: Plan, stop: StopRequest, settings: RunSettings, every_row: bool = False) -> int:
    """What the backend did: a run's table and the lines it ends with, or what was submitted (and, with
    --wait, the submission followed until it ends, then the same lines)."""
    out = out_console()
    for said in started.said:
        out.print(said, highlight=False, markup=False)
    if started.result is not None:
        took = since_process_start()  # this process's seconds: what the own-time and limit lines measure against
        manifest = started.result.manifest
        timing = [own_time_line(manifest, took), limit_line(manifest, took)]
        _ending(out, manifest, str(started.root), every_row, timing)
        for line in samples_short(plan, manifest):
            out.print(line, highlight=False, markup=False)
        out.print(f"manifest: {started.root / 'manifest.json'}", highlight=False)
        _size_note(out, started.root / "manifest.json")
        return started.result.exit_code
    if started.submission is not None and settings.request.backend.wait:
        waited = wait(started.root, stop, out)
        own = batch_own_line(waited.manifest.own_seconds or {}, waited.tasks_own, waited.records)
        _ending(out, waited.manifest, str(started.root), every_row, [own, limit_line(waited.manifest)])
        for line in waited.notes:
            out.print(line, highlight=False)
        _size_note(out, started.root / "manifest.json")
        return waited.exit_code
    if started.submission is not None and stop.by_signal:
        print("ncucampaign: interrupted; the submission stands (cancel it as shown above)", file=sys.stderr)
    return EXIT_OK


def _ending(out: Console, manifest: Manifest, root: str, every_row: bool, timing: list[str | None]) -> None:
    """A run's closing lines: its causes said once, the (folded) table, what was left out of it, the tally, what
    sharing did, the `timing` lines (own time, the limit), the GPU time."""
    for cause in causes(manifest.targets):  # once, with its count, where a row a target said it again
        out.print(cause.line(), highlight=False, markup=False)
    table = final_table(manifest, root, every_row)
    if table.row_count:
        out.print(table)
    else:
        out.print(str(table.title), highlight=False, markup=False)
    lines = [left_out_line(manifest, every_row), tally_line(manifest), *sharing_breakdown(manifest), *timing]
    for line in [*lines, gpu_time_line(manifest)]:
        if line:
            out.print(line, highlight=False, markup=False)


def _size_note(out: Console, manifest: Path) -> None:
    """Where the manifest written is larger than its readers take by default: what reads it (limits.py)."""
    try:
        note = over_limit_note(manifest.stat().st_size)
    except OSError:
        return
    if note:
        out.print(note, style="yellow", highlight=False, markup=False)
