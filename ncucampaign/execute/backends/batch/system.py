"""What the batch room needs of a batch system (Slurm, Kubernetes): one Protocol, implemented once in
each system's folder and looked up by the manifest's `backend` value (execute/backends/systems.py).
The batch room imports neither system: the systems are handed to it."""

from __future__ import annotations

from typing import Protocol

from ncucampaign.execute.backends.batch.files import BatchFiles


class BatchSystem(Protocol):
    name: str  # the manifest's `backend` of its submissions and placements
    flag: str  # what `run` takes to submit to it: --slurm, --k8s
    job_words: str  # how one submission is named: "Slurm array job", "Kubernetes Job"
    queue_words: str  # who says which submissions still run: "squeue", "the Kubernetes API"
    task_column: str  # the final table's column of where each target ran
    retries_its_index: bool  # a task that died is started again for its index, over its record
    lost_because: str  # why a task ends without finishing, as people say it of this system
    shows_gpus_set: bool  # its tasks are given CUDA_VISIBLE_DEVICES when they have GPUs

    def active_jobs(self, job_ids: list[str]) -> set[str] | None:
        """Which of these submissions still run; None when the system cannot say."""
        ...

    def task_words(self, job: object, index: object, node: object = None) -> str:
        """How one task is named in a message: 'its Slurm task (job 42, task 3 on n1)'."""
        ...

    def what_it_printed(self, files: BatchFiles, job: str, index: int) -> str:
        """What a task that claimed nothing printed, or where to read it."""
        ...

    def still_running(self, what: str, jobs: str) -> str:
        """Why `what` (a resume) must wait: these submissions of the run still run."""
        ...

    def follow(self, jobs: str) -> str:
        """How to follow submissions that still run: 'Slurm array job 42 still running: `squeue -j 42`'."""
        ...
