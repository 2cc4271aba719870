"""Shared by the commands that meet runs submitted to Slurm: merging the tasks' records first."""

from __future__ import annotations

import sys
from pathlib import Path

from ncucampaign.errors import EnvironmentProblem, UsageError
from ncucampaign.execute.collect import Collected, collect
from ncucampaign.execute.store import RunStore
from ncucampaign.results.runs import LoadedRun, load_run


def collect_run(loaded: LoadedRun) -> tuple[RunStore, Collected]:
    """Merge the Slurm tasks' records into the run's manifest.json, under the run's lock (the manifest
    is read again under it: a submission may have written it since)."""
    store = RunStore.open(loaded.root)
    with store.lock():
        return store, collect(store, load_run(loaded.root).manifest)


def load_collected(path: str | Path) -> LoadedRun:
    """A run for summarize or report: one submitted to Slurm is collected first. Best effort: a run
    directory that cannot be written (or is busy) is read as it is, with a note."""
    loaded = load_run(path)
    if not loaded.manifest.slurm_arrays:
        return loaded
    try:
        _, collected = collect_run(loaded)
    except (EnvironmentProblem, UsageError) as exc:
        print(f"ncucampaign: note: the Slurm tasks' records were not collected ({exc})", file=sys.stderr)
        return loaded
    return LoadedRun(loaded.root, collected.manifest)


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
