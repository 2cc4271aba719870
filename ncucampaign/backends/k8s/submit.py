"""The Kubernetes backend's submitting side: an open run directory's pending units as one Indexed Job, written into the
run directory (slurm/array-<n>.k8s.yaml, what `kubectl apply -f` would take) and created through the API."""

from __future__ import annotations

from ncucampaign.backends.batch.files import BatchFiles
from ncucampaign.backends.k8s.api import create_job
from ncucampaign.backends.k8s.job import JobRequest, indexed_job, job_yaml, task_names
from ncucampaign.backends.k8s.settings import KUBERNETES_BACKEND
from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.open_run import OpenRun
from ncucampaign.execute.rundir.book import now_iso
from ncucampaign.execute.rundir.manifest import Submission
from ncucampaign.execute.rundir.task_list import BATCH, TaskList
from ncucampaign.plan.share.groups import share_plan
from ncucampaign.plan.units import array_tasks, units_in_plan_order
from ncucampaign.spec.kubernetes import KubernetesSection


def submit_job(run: OpenRun, settings: KubernetesSection) -> Submission:
    """Write the Job and its task list into the run directory and create it: one index per unit of
    what is left to run. EnvironmentProblem when the API refuses it (the run records the refusal)."""
    files = BatchFiles(run.store)
    files.make_folders()
    number = len(run.manifest.slurm_arrays) + 1
    shares = share_plan(run.to_run, run.settings.share, run.settings.installed)
    tasks = tuple(array_tasks(units_in_plan_order(run.to_run, shares)))
    for task in tasks:  # a target rerun by this Job may be claimed again
        for name in task.names:
            files.retire_claim(name, f"array-{number}")
    request = JobRequest(run.plan.campaign, run.store.run.root, number, run.store.run.run_id, tasks, settings)
    job = indexed_job(request)
    job_id = f"{job['metadata']['namespace']}/{job['metadata']['name']}"
    listing = TaskList(tasks=task_names(tasks), share=run.settings.share, backend=KUBERNETES_BACKEND, job_id=job_id)
    listing.write(run.store, number)
    path = run.store.write_text(f"{BATCH}/array-{number}.k8s.yaml", job_yaml(job))
    record = Submission(
        number=number,
        backend=KUBERNETES_BACKEND,
        job_id=None,
        submitted_at=now_iso(),
        script=run.store.run.relative(path),
        tasks=task_names(tasks),
    )
    try:
        create_job(job)
    except EnvironmentProblem:
        run.book.commit(lambda: run.manifest.slurm_arrays.append(record))
        run.book.commit(lambda: setattr(run.manifest, "state", "interrupted"))
        raise
    record.job_id = job_id
    run.book.commit(lambda: run.manifest.slurm_arrays.append(record))
    run.book.commit(lambda: setattr(run.manifest, "state", "submitted"))
    return record
