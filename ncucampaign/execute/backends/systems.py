"""The backends of `run`, one line each: here, Slurm, Kubernetes. `run` looks a request's backend up here, collect
and the display a submission's `backend`. A new backend: a folder beside slurm/ and k8s/, and a line here."""

from __future__ import annotations

from ncucampaign.execute.backends.contract import Backend
from ncucampaign.execute.backends.k8s.system import KUBERNETES
from ncucampaign.execute.backends.local import LOCAL
from ncucampaign.execute.backends.slurm.system import SLURM
from ncucampaign.execute.rundir.manifest import FIRST_BACKEND

BACKENDS: dict[str, Backend] = {backend.name: backend for backend in (LOCAL, SLURM, KUBERNETES)}
BATCH: dict[str, Backend] = {name: backend for name, backend in BACKENDS.items() if backend.words.flag}


def batch_system(backend: str) -> Backend:
    """The batch system a submission or placement names (the manifest's `backend`; Slurm's for older
    records, which name none)."""
    return BATCH.get(backend, BATCH[FIRST_BACKEND])
