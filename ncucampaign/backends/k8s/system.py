"""Kubernetes as a backend (backends/contract.py): a run's units as one Indexed Job on a shared
volume, an index a unit; the Job starts a new pod for an index whose pod was killed."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ncucampaign.backends.batch.files import BatchFiles
from ncucampaign.backends.batch.submission import submitted
from ncucampaign.backends.contract import BatchSystem, BatchWords, Flag, Prepared, Started
from ncucampaign.backends.k8s.api import active_jobs, require_cluster
from ncucampaign.backends.k8s.job import JobRequest, indexed_job, job_yaml, settings_problem
from ncucampaign.backends.k8s.settings import FLAGS, KUBERNETES_BACKEND, k8s_runs_root, k8s_settings
from ncucampaign.backends.k8s.submit import ONE_JOB, JobSender
from ncucampaign.backends.k8s.task import pod_index, pod_placement
from ncucampaign.errors import UsageError
from ncucampaign.execute.attempt.context import Reporter
from ncucampaign.execute.open_run import OpenRun
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.manifest import TaskPlacement
from ncucampaign.execute.rundir.request import BackendRequest, RunRequest
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.rundir.task_list import TaskList
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.units import Unit, submissions
from ncucampaign.spec.kubernetes import KubernetesSection
from ncucampaign.spec.loader import LoadedCampaign

WEIGH_NOTE = (
    "the timing pass (weigh) is not run in Kubernetes Jobs; findings of this run will rank by ncu's own estimates"
)


class KubernetesSystem(BatchSystem[KubernetesSection]):
    name = KUBERNETES_BACKEND
    words = BatchWords(
        flag="--k8s",
        help="submit the targets as a Kubernetes Indexed Job (one index per target or group)",
        job="Kubernetes Job",
        queue="the Kubernetes API",
        task_column="pod (job_index node)",
        lost_because="killed, evicted or lost",
        task="its pod (Job {job}, index {index}{on})",
        running="{what}: Kubernetes Job {jobs} of this run still runs; wait for it",
        follow="Kubernetes Job {jobs} still running",
        stopping="stopping once the submission is recorded; the Job runs on (delete it as shown)",
        task_command="k8s-task",
        task_help="(used by run --k8s's Job) run one index of an Indexed Job",
    )
    flags: tuple[Flag, ...] = FLAGS
    retries_its_index = True
    shows_gpus_set = False  # a pod without GPUs has no CUDA_VISIBLE_DEVICES: nothing to show

    def check(self, request: RunRequest) -> None:
        if request.gpus or request.jobs_per_gpu != 1 or request.show_output:
            raise UsageError(
                "--k8s gives each pod the GPUs its Job asks for: drop --gpus, --jobs-per-gpu, --show-output"
            )

    def prepare(
        self, choice: BackendRequest, loaded: LoadedCampaign, plan: Plan, root: Path
    ) -> Prepared[KubernetesSection]:
        section = k8s_settings(choice, loaded)
        # the pods' image may hold ncu: the submitting machine needs none
        return Prepared(k8s_runs_root(root, section), section, ncu_elsewhere=True)

    def before_opening(self, prepared: Prepared[KubernetesSection], run_dir: Path) -> None:
        problem = settings_problem(prepared.settings, run_dir.absolute())
        if problem:
            raise UsageError(problem)
        require_cluster()

    def start(
        self, prepared: Prepared[KubernetesSection], opened: OpenRun, reporter: Reporter, stop: StopRequest
    ) -> Started:
        notes = (WEIGH_NOTE,) if opened.settings.weigh else ()
        root, campaign = opened.store.run.root, opened.plan.campaign
        jobs = submitted(opened, JobSender(prepared.settings), self.words.flag)
        if not jobs:
            return Started(root, said=(*notes, f"{campaign}: every target is ok; nothing to submit"))
        job = jobs[-1]
        namespace, _, name = (job.job_id or "/").partition("/")
        said = (
            f"{campaign}: created Kubernetes Job {job.job_id} ({len(job.tasks)} indexes) for {root}\n"
            f"  follow:  kubectl get job -n {namespace} {name}\n"
            f"  collect: ncucampaign collect {root}\n"
            f"  cancel:  kubectl delete job -n {namespace} {name}   (then: ncucampaign run --resume {root} --k8s)"
        )
        return Started(root, submission=job, said=(*notes, said))

    def plan_text(
        self, prepared: Prepared[KubernetesSection], plan: Plan, units: Sequence[Unit], run_dir: Path
    ) -> str | None:
        """The Job of each submission (one, and a trace pool's second stage: its pods wait for the pool's plan)."""
        section = prepared.settings
        problem = settings_problem(section)
        if problem:
            raise UsageError(problem)
        where = prepared.runs_root / plan.campaign / "plan"
        requests = [JobRequest(plan.campaign, where, one.number, "plan", one.tasks, section) for one in
                    submissions(units, ONE_JOB, 1, holds_back=False)]  # fmt: skip
        jobs = [indexed_job(request) for request in requests]
        return "---\n".join(job_yaml(job) for job in jobs)

    def active_jobs(self, job_ids: list[str]) -> set[str] | None:
        return active_jobs(job_ids)

    def task_index(self, listing: TaskList, array: int, given: int | None) -> int:
        if listing.job_id is None or listing.backend != KUBERNETES_BACKEND:
            raise UsageError(f"array {array} is not a Kubernetes Job (its task list says {listing.backend!r})")
        return pod_index(os.environ)  # the Job's JOB_COMPLETION_INDEX

    def task_placement(self, store: RunStore, listing: TaskList, index: int) -> TaskPlacement:
        return pod_placement(BatchFiles(store), str(listing.job_id), os.environ)

    def what_it_printed(self, job: str, index: int, tail: str | None) -> str:
        return f"kubectl logs -n {job.replace('/', ' job/')} shows what it printed"  # the cluster's, not a file here


KUBERNETES = KubernetesSystem()
