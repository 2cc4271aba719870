"""Slurm, as the batch room sees it (execute/backends/batch/system.py)."""

from __future__ import annotations

from ncucampaign.execute.backends.batch.files import BATCH, BatchFiles
from ncucampaign.execute.backends.slurm.queue import active_jobs


class SlurmSystem:
    name = "slurm"
    flag = "--slurm"
    job_words = "Slurm array job"
    queue_words = "squeue"
    task_column = "slurm task"
    retries_its_index = False
    lost_because = "node failure, scancel without -b, or the time limit"
    shows_gpus_set = True

    def active_jobs(self, job_ids: list[str]) -> set[str] | None:
        return active_jobs(job_ids)

    def task_words(self, job: object, index: object, node: object = None) -> str:
        return f"its Slurm task (job {job}, task {index}{f' on {node}' if node else ''})"

    def what_it_printed(self, files: BatchFiles, job: str, index: int) -> str:
        last_line, output = files.output_tail(job, index), f"{BATCH}/out/{job}_{index}.out"
        if last_line is None:
            return f"it left no output ({output}): Slurm could not start it or write its output"
        return f"it printed: {last_line}" if last_line else "it printed nothing"

    def still_running(self, what: str, jobs: str) -> str:
        return (
            f"{what}: Slurm array job {jobs} of this run is still queued or running; wait for it, or cancel "
            f"it cleanly with `scancel -b -s INT {jobs.split(',')[0]}`"
        )

    def follow(self, jobs: str) -> str:
        return f"Slurm array job {jobs} still running: `squeue -j {jobs}`"


SLURM = SlurmSystem()
