"""The Kubernetes backend's part of a submission (batch/submission.py): what is left to run as one Indexed Job,
written into the run directory (slurm/array-<n>.k8s.yaml, what `kubectl apply -f` would take) and created through
the API."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ncucampaign.backends.batch.submission import Draft
from ncucampaign.backends.k8s.api import create_job
from ncucampaign.backends.k8s.job import JobRequest, indexed_job, job_yaml
from ncucampaign.backends.k8s.settings import KUBERNETES_BACKEND
from ncucampaign.execute.open_run import OpenRun
from ncucampaign.plan.units import ArrayTask
from ncucampaign.spec.kubernetes import KubernetesSection

ONE_JOB = 1 << 30  # an Indexed Job holds every index of a run: one submission


@dataclass(frozen=True)
class JobSender:
    """One Job a submission, one index per unit; EnvironmentProblem when the API refuses it."""

    settings: KubernetesSection
    most: int = ONE_JOB
    backend: str = KUBERNETES_BACKEND
    holds_back: bool = False  # Jobs start at once: a pool's second stage shares its Job, its pods wait for the plan

    def draft(self, run: OpenRun, number: int, tasks: Sequence[ArrayTask], after: Sequence[str]) -> Draft:
        """One Job: a pool's second stage in it, after its first index (`after` is empty), its pods waiting for the
        pool's plan."""
        request = JobRequest(
            run.plan.campaign, run.store.run.root, number, run.store.run.run_id, tuple(tasks), self.settings
        )
        job = indexed_job(request)
        job_id = f"{job['metadata']['namespace']}/{job['metadata']['name']}"

        def create(path: Path) -> str:
            create_job(job)  # the object the file says; EnvironmentProblem when the API refuses it
            return job_id

        return Draft("k8s.yaml", job_yaml(job), create, job_id=job_id)
