"""Slurm as a backend (backends/contract.py): a run's units as a job array, one task per unit,
submitted with sbatch and followed with squeue."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ncucampaign.backends.batch.files import BatchFiles
from ncucampaign.backends.batch.submission import submitted
from ncucampaign.backends.contract import BatchSystem, BatchWords, Flag, Prepared, Started
from ncucampaign.backends.slurm.queue import SLURM_BACKEND, active_jobs, placement, slurm_command
from ncucampaign.backends.slurm.script import batch_script, check_slurm_args, refused_run_dir
from ncucampaign.backends.slurm.submit import SlurmSender, max_array_tasks
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
from ncucampaign.spec.loader import LoadedCampaign

SLURM_ARG = "--slurm-arg"
WEIGH_NOTE = "the timing pass (weigh) is not run in {job}s; findings of this run will rank by ncu's own estimates"


class SlurmSystem(BatchSystem[tuple[str, ...]]):
    name = SLURM_BACKEND
    words = BatchWords(
        flag="--slurm",
        help="submit the targets as a Slurm job array (one task per target or group)",
        job="Slurm array job",
        queue="squeue",
        task_column="slurm task",
        lost_because="node failure, scancel without -b, or the time limit",
        task="its Slurm task (job {job}, task {index}{on})",
        running="{what}: Slurm array job {jobs} of this run is still queued or running; wait for it, or cancel it "
        "cleanly with `scancel -b -s INT {first}`",
        follow="Slurm array job {jobs} still running: `squeue -j {jobs}`",
        stopping="stopping once the submission is recorded; the array runs on (cancel it as shown)",
        task_command="slurm-task",
        task_help="(used by run --slurm's batch script) run one array task",
        task_index_help="$SLURM_ARRAY_TASK_ID",
    )
    flags: tuple[Flag, ...] = (
        Flag(SLURM_ARG, "an sbatch option for the array, e.g. --slurm-arg=--partition=gpu (repeatable)", "ARG", True),
    )
    retries_its_index = False
    shows_gpus_set = True

    def check(self, request: RunRequest) -> None:
        if request.gpus or request.jobs_per_gpu != 1 or request.show_output:
            raise UsageError(
                "--slurm gives each task the GPUs Slurm allocates: drop --gpus, --jobs-per-gpu, --show-output"
            )
        problem = check_slurm_args(list(request.backend.values(SLURM_ARG)))
        if problem:
            raise UsageError(problem)
        for command in ("sbatch", "squeue"):  # before a run directory is created for nothing
            slurm_command(command)

    def prepare(
        self, choice: BackendRequest, loaded: LoadedCampaign, plan: Plan, root: Path
    ) -> Prepared[tuple[str, ...]]:
        slurm_args = tuple(choice.values(SLURM_ARG))
        problem = check_slurm_args(list(slurm_args))  # `plan --slurm` checks them too, without sbatch
        if problem:
            raise UsageError(problem)
        return Prepared(root, slurm_args)

    def before_opening(self, prepared: Prepared[tuple[str, ...]], run_dir: Path) -> None:
        problem = refused_run_dir(run_dir)
        if problem:
            raise UsageError(problem)

    def start(
        self, prepared: Prepared[tuple[str, ...]], opened: OpenRun, reporter: Reporter, stop: StopRequest
    ) -> Started:
        notes = (WEIGH_NOTE.format(job=self.words.job),) if opened.settings.weigh else ()
        root, campaign = opened.store.run.root, opened.plan.campaign
        arrays = submitted(opened, SlurmSender(prepared.settings, max_array_tasks()), self.words.flag)
        if not arrays:
            return Started(root, said=(*notes, f"{campaign}: every target is ok; nothing to submit"))
        jobs = ",".join(str(array.job_id) for array in arrays)
        tasks = sum(len(array.tasks) for array in arrays)
        what = f"array job {jobs}" if len(arrays) == 1 else f"{len(arrays)} array jobs {jobs}"
        said = (
            f"{campaign}: submitted Slurm {what} ({tasks} tasks) for {root}\n"
            f"  follow:  squeue -j {jobs}\n"
            f"  collect: ncucampaign collect {root}\n"
            f"  cancel:  scancel -t PENDING {jobs.replace(',', ' ')}; scancel -b -s INT {jobs.replace(',', ' ')}\n"
            "           (-b -s INT alone stops the running tasks, which record what they did, but lets pending ones "
            f"start; then: ncucampaign run --resume {root} --slurm)"
        )
        return Started(root, submission=arrays[-1], said=(*notes, said))

    def plan_text(
        self, prepared: Prepared[tuple[str, ...]], plan: Plan, units: Sequence[Unit], run_dir: Path
    ) -> str | None:
        """The batch script of each array the run would submit (as many as the cluster's MaxArraySize asks; a trace
        pool's second stage after the array task of its first, <job N> standing for array N's job id)."""
        self.before_opening(prepared, run_dir)
        scripts = [
            batch_script(
                campaign=plan.campaign,
                run_dir=run_dir,
                array=one.number,
                tasks=one.tasks,
                python=sys.executable,
                slurm_args=prepared.settings,
                after=[f"<job {number}>_{index}" for number, index in one.after],
            )
            for one in submissions(units, max_array_tasks(), 1)
        ]
        return "\n".join(scripts)

    def active_jobs(self, job_ids: list[str]) -> set[str] | None:
        return active_jobs(job_ids)

    def task_index(self, listing: TaskList, array: int, given: int | None) -> int:
        if given is None:  # the batch script gives it (backends/slurm/script.py)
            raise UsageError("slurm-task needs --index (the array task's $SLURM_ARRAY_TASK_ID)")
        return given

    def task_placement(self, store: RunStore, listing: TaskList, index: int) -> TaskPlacement:
        return placement(BatchFiles(store))

    def what_it_printed(self, job: str, index: int, tail: str | None) -> str:
        if tail is None:
            return f"it left no output (slurm/out/{job}_{index}.out): Slurm could not start it or write its output"
        return f"it printed: {tail}" if tail else "it printed nothing"


SLURM = SlurmSystem()
