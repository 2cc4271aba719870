"""Kubernetes, as the batch room sees it (execute/backends/batch/system.py): an Indexed Job is a
submission, a pod one of its tasks, and the Job starts a new pod for an index whose pod was killed."""

from __future__ import annotations

from ncucampaign.execute.backends.batch.files import BatchFiles
from ncucampaign.execute.backends.k8s.api import active_jobs

KUBERNETES_BACKEND = "kubernetes"  # the manifest's `backend` of a Job and of a pod's placement


class KubernetesSystem:
    name = KUBERNETES_BACKEND
    flag = "--k8s"
    job_words = "Kubernetes Job"
    queue_words = "the Kubernetes API"
    task_column = "pod (job_index node)"
    retries_its_index = True
    lost_because = "killed, evicted or lost"
    shows_gpus_set = False  # a pod without GPUs has no CUDA_VISIBLE_DEVICES: nothing to show

    def active_jobs(self, job_ids: list[str]) -> set[str] | None:
        return active_jobs(job_ids)

    def task_words(self, job: object, index: object, node: object = None) -> str:
        return f"its pod (Job {job}, index {index}{f' on {node}' if node else ''})"

    def what_it_printed(self, files: BatchFiles, job: str, index: int) -> str:
        return f"kubectl logs -n {job.replace('/', ' job/')} shows what it printed"  # the cluster's, not a file here

    def still_running(self, what: str, jobs: str) -> str:
        return f"{what}: Kubernetes Job {jobs} of this run still runs; wait for it"

    def follow(self, jobs: str) -> str:
        return f"Kubernetes Job {jobs} still running"


KUBERNETES = KubernetesSystem()
