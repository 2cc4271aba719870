"""The batch systems, one line each: what `run --slurm`/`--k8s`, collect and the run's display look a
submission's `backend` up in. A third batch system is one folder beside slurm/ and k8s/ and one line
here."""

from __future__ import annotations

from ncucampaign.execute.backends.batch.system import BatchSystem
from ncucampaign.execute.backends.k8s.system import KUBERNETES
from ncucampaign.execute.backends.slurm.system import SLURM

BATCH_SYSTEMS: dict[str, BatchSystem] = {system.name: system for system in (SLURM, KUBERNETES)}


def batch_system(backend: str) -> BatchSystem:
    """The system a submission or placement names (the manifest's `backend`; Slurm's by default)."""
    return BATCH_SYSTEMS.get(backend, SLURM)
