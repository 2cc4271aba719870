"""Shared by the commands that meet runs submitted to Slurm: merging the tasks' records first."""

from __future__ import annotations

import sys
from pathlib import Path

from ncucampaign.errors import EnvironmentProblem, UsageError
from ncucampaign.execute.collect import Collected, collect
from ncucampaign.execute.store import RunStore
from ncucampaign.results.runs import load_run


def collect_run(path: str | Path) -> tuple[RunStore, Collected]:
    """Merge the Slurm tasks' records into the run's manifest.json (under the run's lock)."""
    loaded = load_run(path)
    store = RunStore.open(loaded.root)
    with store.lock():
        return store, collect(store, loaded.manifest)


def refresh_if_slurm(path: str | Path) -> None:
    """Before summarize or report: a run submitted to Slurm is collected first. Best effort: a run
    directory that cannot be written (or is busy) is read as it is, with a note."""
    try:
        loaded = load_run(path)
    except UsageError:
        return  # the command itself says what is wrong with it
    if not loaded.manifest.slurm_arrays:
        return
    try:
        collect_run(loaded.root)
    except (EnvironmentProblem, UsageError) as exc:
        print(f"ncucampaign: note: the Slurm tasks' records were not collected ({exc})", file=sys.stderr)


def describe(collected: Collected) -> list[str]:
    lines = [f"ncucampaign: {problem}" for problem in collected.problems]
    if not collected.queue_known:
        lines.append(
            "squeue cannot say which of the run's arrays still run (not on this machine?): targets whose task "
            "has not finished are shown as recorded so far"
        )
    elif collected.active:
        jobs = ", ".join(sorted(collected.active))
        lines.append(f"Slurm array job {jobs} still running: `squeue -j {jobs}`; collect again when it ends")
    return lines
