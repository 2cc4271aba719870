"""What every backend of `run` does (here, Slurm, Kubernetes: one table, systems.py), and the values it is handed
and hands back: check a request, say where its runs go and what must hold first, start (here) or submit the
opened run, and list its submissions still running; its wording is one value (Words). commands/run.py calls
these verbs, and nothing outside the backends' folders asks which backend it holds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ncucampaign.execute.attempt.context import Reporter
from ncucampaign.execute.open_run import OpenRun
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.manifest import Submission, TaskPlacement
from ncucampaign.execute.rundir.request import RunRequest
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.rundir.task_list import TaskList
from ncucampaign.execute.units import RunResult
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.units import ArrayTask
from ncucampaign.spec.loader import LoadedCampaign


@dataclass(frozen=True)
class Flag:
    """One of a backend's options on run's and plan's command lines (its value kept as given)."""

    name: str  # --slurm-arg
    help: str
    metavar: str = "VALUE"
    repeat: bool = False
    number: bool = False  # an integer


@dataclass(frozen=True)
class Words:
    """How people call a backend, its submissions and its tasks. Templates take {job}, {index} and
    {on} (' on <node>'), {what} and {jobs} (and {first}: the first of them)."""

    stopping: str  # what the first Ctrl-C does, as `run` says it
    flag: str = ""  # what run takes to choose it (none: this machine, the default)
    help: str = ""  # that flag's help
    job: str = ""  # how one submission is named: "Slurm array job"
    queue: str = ""  # who says which submissions still run: "squeue"
    task_column: str = ""  # the final table's column of where each target ran
    lost_because: str = ""  # why a task ends without finishing, as people say it of this system
    task: str = ""  # "its Slurm task (job {job}, task {index}{on})"
    running: str = ""  # why {what} (a resume) waits: its submissions {jobs} still run
    follow: str = ""  # how to follow submissions {jobs} that still run
    task_command: str = ""  # the command one of its tasks runs, not meant to be typed: "slurm-task"
    task_help: str = ""  # that command's help
    task_index_help: str = ""  # what its --index is given (none: the task finds its index itself)

    def task_words(self, job: object, index: object, node: object = None) -> str:
        return self.task.format(job=job, index=index, on=f" on {node}" if node else "")

    def still_running(self, what: str, jobs: str) -> str:
        return self.running.format(what=what, jobs=jobs, first=jobs.split(",")[0])

    def following(self, jobs: str) -> str:
        return self.follow.format(jobs=jobs)


@dataclass(frozen=True)
class Prepared:
    """A request its backend has checked against the campaign: where its runs go, and its settings
    settled (the backend's own value, read by that backend only)."""

    runs_root: Path
    settings: object = None


@dataclass(frozen=True)
class Started:
    """What a backend did with an opened run: ran it here (`result`), or handed it to its batch system
    (`submission`; neither: every target was ok, nothing was submitted), and what it has to say."""

    root: Path
    result: RunResult | None = None
    submission: Submission | None = None
    said: tuple[str, ...] = ()


class Backend(Protocol):
    name: str  # the request's and the manifest's `backend`
    words: Words
    flags: tuple[Flag, ...]  # its own options, besides words.flag
    ncu_elsewhere: bool  # its tasks find ncu where they run: the machine that submits them may have none
    retries_its_index: bool  # a task that died is started again for its index, over its record
    shows_gpus_set: bool  # its tasks are given CUDA_VISIBLE_DEVICES when they have GPUs

    def check(self, request: RunRequest) -> None:
        """Before the campaign is read: a UsageError for what does not go with it; its tools found."""
        ...

    def prepare(self, request: RunRequest, loaded: LoadedCampaign, plan: Plan, root: Path) -> Prepared:
        """Its settings for this campaign, checked, and where its runs go (`root`: as the campaign says)."""
        ...

    def before_opening(self, prepared: Prepared, run_dir: Path) -> None:
        """What must hold before the run directory `run_dir` is made or reopened for it."""
        ...

    def start(self, prepared: Prepared, opened: OpenRun, reporter: Reporter, stop: StopRequest) -> Started:
        """Run the opened run here, or submit it; it lets go of the run directory."""
        ...

    def plan_text(self, prepared: Prepared, plan: Plan, tasks: Sequence[ArrayTask], run_dir: Path) -> str | None:
        """What `plan` prints of a submission of these tasks (None: the plan's commands)."""
        ...

    def active_jobs(self, job_ids: list[str]) -> set[str] | None:
        """Which of these submissions still run; None when the system cannot say."""
        ...

    def task_index(self, listing: TaskList, array: int, given: int | None) -> int:
        """Which task of submission `array` (its task list: `listing`) this process runs, in the batch system
        (`given`: the task command's --index)."""
        ...

    def task_placement(self, store: RunStore, listing: TaskList, index: int) -> TaskPlacement:
        """Where this task runs, from what the batch system tells it."""
        ...

    def what_it_printed(self, job: str, index: int, tail: str | None) -> str:
        """What a task that claimed nothing printed (`tail`: the last line of its output file, where
        the system writes one; None: there is none), or where to read it."""
        ...
