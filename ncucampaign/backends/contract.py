"""What every backend of `run` does (here, Slurm, Kubernetes: one table, systems.py), and what only batch systems
do besides: check a request, settle its own settings and where its runs go, start (here) or submit the opened run;
a batch system also says which of its submissions still run and where a task of one runs. Defaults stand for
what a backend has nothing to do in (pre-commit's lang_base), so a backend writes only what it does.
commands/run.py calls these verbs, and nothing outside the backends' folders asks which backend it holds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from ncucampaign.execute.attempt.context import Reporter
from ncucampaign.execute.open_run import OpenRun
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.manifest import Submission, TaskPlacement
from ncucampaign.execute.rundir.request import BackendRequest, RunRequest
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.rundir.task_list import TaskList
from ncucampaign.execute.units import RunResult
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.units import Unit
from ncucampaign.spec.loader import LoadedCampaign

S = TypeVar("S")  # a backend's own settings, settled by its prepare() and read by it alone


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
    """How people call a backend: what the first Ctrl-C does, and the flag that chooses it."""

    stopping: str  # what the first Ctrl-C does, as `run` says it
    flag: str = ""  # what run takes to choose it (none: this machine, the default)
    help: str = ""  # that flag's help


@dataclass(frozen=True)
class BatchWords(Words):
    """How people call a batch system, its submissions and its tasks. Templates take {job}, {index} and
    {on} (' on <node>'), {what} and {jobs} (and {first}: the first of them)."""

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
class Prepared(Generic[S]):
    """A request its backend has checked against the campaign: where its runs go, its own settings settled
    (typed: the backend that made them reads them back as they are), and whether its tasks find ncu where they
    run (the machine that submits them may have none)."""

    runs_root: Path
    settings: S
    ncu_elsewhere: bool = False


@dataclass(frozen=True)
class Started:
    """What a backend did with an opened run: ran it here (`result`), or handed it to its batch system
    (`submission`; neither: every target was ok, nothing was submitted), and what it has to say."""

    root: Path
    result: RunResult | None = None
    submission: Submission | None = None
    said: tuple[str, ...] = ()


class Backend(Protocol[S]):
    """Where a run's units run. A sibling subclasses it and keeps the defaults it has nothing to add to."""

    name: str  # the request's and the manifest's `backend`
    words: Words
    flags: tuple[Flag, ...] = ()  # its own options, besides words.flag

    def check(self, request: RunRequest) -> None:
        """Before the campaign is read: a UsageError for what does not go with it; its tools found."""
        return None

    def prepare(self, choice: BackendRequest, loaded: LoadedCampaign, plan: Plan, root: Path) -> Prepared[S]:
        """Its settings for this campaign (`choice`: its flags as given), checked, and where its runs go
        (`root`: as the campaign says)."""
        ...

    def before_opening(self, prepared: Prepared[S], run_dir: Path) -> None:
        """What must hold before the run directory `run_dir` is made or reopened for it."""
        return None

    def start(self, prepared: Prepared[S], opened: OpenRun, reporter: Reporter, stop: StopRequest) -> Started:
        """Run the opened run here, or submit it; it lets go of the run directory."""
        ...

    def plan_text(self, prepared: Prepared[S], plan: Plan, units: Sequence[Unit], run_dir: Path) -> str | None:
        """What `plan` prints of a submission of these units (plan/units.py's submissions; None: the plan's
        commands)."""
        return None


class BatchSystem(Backend[S], Protocol[S]):
    """A backend whose units run as the tasks of submissions (a Slurm array, a Kubernetes Indexed Job): a task
    command (`words.task_command`) runs one, and collect asks the system which submissions still run."""

    words: BatchWords
    retries_its_index: bool  # a task that died is started again for its index, over its record
    shows_gpus_set: bool  # its tasks are given CUDA_VISIBLE_DEVICES when they have GPUs

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
