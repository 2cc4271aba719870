"""The backends of `run`, one line each: here, Slurm, Kubernetes. `run` looks a request's backend up here, collect
and the display a submission's `backend`. A new backend: a folder beside slurm/ and k8s/, and a line here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ncucampaign.backends.batch.collect import collect
from ncucampaign.backends.contract import Backend, BatchSystem
from ncucampaign.backends.k8s.system import KUBERNETES
from ncucampaign.backends.local import LOCAL
from ncucampaign.backends.slurm.system import SLURM
from ncucampaign.errors import EnvironmentProblem, UsageError, printable
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.results.reading.runs import LoadedRun, load_run

BATCH: dict[str, BatchSystem[Any]] = {system.name: system for system in (SLURM, KUBERNETES)}
BACKENDS: dict[str, Backend[Any]] = {LOCAL.name: LOCAL, **BATCH}


def batch_system(backend: str) -> BatchSystem[Any]:
    """The batch system a submission or placement names (the manifest's `backend`; Slurm's for older
    records, which name none)."""
    return BATCH.get(backend) or next(iter(BATCH.values()))


def load_collected(path: str | Path) -> LoadedRun:
    """A run for a command that reads it (summarize, report, compare, findings): one submitted to Slurm
    or Kubernetes has its tasks' records merged in memory, touching no process and writing nothing
    (the run directory may be read-only, or another command's). Best effort: records that cannot be
    read leave the run as its manifest says, with a note."""
    loaded = load_run(path)
    if not loaded.manifest.submissions:
        return loaded
    try:
        collected = collect(RunStore.open(loaded.root), loaded.manifest, BATCH, clean_up=False, save=False)
    except (EnvironmentProblem, UsageError) as exc:
        print(
            f"ncucampaign: note: the batch tasks' records were not collected ({printable(str(exc))})", file=sys.stderr
        )
        return loaded
    return LoadedRun(loaded.root, collected.manifest)
