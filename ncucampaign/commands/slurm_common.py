"""Shared by the commands that meet runs submitted to Slurm: merging the tasks' records first."""

from __future__ import annotations

import sys
from pathlib import Path

from ncucampaign.errors import EnvironmentProblem, UsageError, printable
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.slurm.collect import Collected, collect
from ncucampaign.results.reading.runs import LoadedRun, load_run


def collect_run(loaded: LoadedRun, clean_up: bool = True) -> tuple[RunStore, Collected]:
    """Merge the Slurm tasks' records into the run's manifest.json, under the run's lock (the manifest
    is read again under it: a submission may have written it since). `clean_up`: also kill what dead
    tasks left running here (collect, --resume, --wait; never a command that only reads)."""
    store = RunStore.open(loaded.root)
    with store.lock():
        return store, collect(store, load_run(loaded.root).manifest, clean_up)


def load_collected(path: str | Path) -> LoadedRun:
    """A run for a command that reads it (summarize, report, compare, findings): one submitted to Slurm
    or Kubernetes has its tasks' records merged in memory, touching no process and writing nothing
    (the run directory may be read-only, or another command's). Best effort: records that cannot be
    read leave the run as its manifest says, with a note."""
    loaded = load_run(path)
    if not loaded.manifest.slurm_arrays:
        return loaded
    try:
        collected = collect(RunStore.open(loaded.root), loaded.manifest, clean_up=False, save=False)
    except (EnvironmentProblem, UsageError) as exc:
        print(
            f"ncucampaign: note: the Slurm tasks' records were not collected ({printable(str(exc))})", file=sys.stderr
        )
        return loaded
    return LoadedRun(loaded.root, collected.manifest)


def describe(collected: Collected) -> list[str]:
    lines = [f"ncucampaign: {problem}" for problem in collected.problems]
    kubernetes = any(a.backend == "kubernetes" for a in collected.manifest.slurm_arrays)
    if not collected.queue_known:
        asked = "the Kubernetes API" if kubernetes else "squeue"
        lines.append(
            f"{asked} cannot say which of the run's arrays still run (not on this machine?): targets whose task "
            "has not finished are shown as recorded so far"
        )
    elif collected.active:
        jobs = ", ".join(sorted(collected.active))
        follow = f"Kubernetes Job {jobs} still running" if kubernetes else (
            f"Slurm array job {jobs} still running: `squeue -j {jobs}`"
        )  # fmt: skip
        lines.append(f"{follow}; collect again when it ends")
    return lines
