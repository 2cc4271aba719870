"""The toy batch system: a submission is a text file listing its task commands; sending it runs them, one after
another, in this process's stead (as `python entry.py toy-task RUN --array N --index I`). Nothing is left running
once it is sent, so it says no submission still runs."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ncucampaign.backends.batch.files import BatchFiles
from ncucampaign.backends.batch.submission import Draft, submitted
from ncucampaign.backends.contract import BatchSystem, BatchWords, Prepared, Started
from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.attempt.context import Reporter
from ncucampaign.execute.open_run import OpenRun
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.manifest import TaskPlacement
from ncucampaign.execute.rundir.request import BackendRequest
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.rundir.task_list import TaskList
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.units import ArrayTask, Unit
from ncucampaign.spec.loader import LoadedCampaign

ENTRY = Path(__file__).with_name("entry.py")


def task_lines(run_dir: Path, number: int, count: int) -> str:
    return "".join(f"toy-task {run_dir} --array {number} --index {index}\n" for index in range(count))


@dataclass(frozen=True)
class ToySender:
    most: int = 2  # two tasks a submission: a run of three targets is two submissions
    backend: str = "toy"
    holds_back: bool = False  # its submissions start at once

    def draft(self, run: OpenRun, number: int, tasks: Sequence[ArrayTask], after: Sequence[str]) -> Draft:
        root = run.store.run.root

        def send(path: Path) -> str:
            for line in path.read_text().splitlines():
                done = subprocess.run([sys.executable, str(ENTRY), *line.split()], capture_output=True, text=True)
                if done.returncode not in (0, 1):
                    raise EnvironmentProblem(f"the toy task failed: {done.stderr.strip()[-300:]}")
            return f"toy-{number}"

        return Draft("toy.txt", task_lines(root, number, len(tasks)), send, job_id=f"toy-{number}")


class ToySystem(BatchSystem[None]):
    name = "toy"
    words = BatchWords(
        stopping="stopping once the submission is recorded",
        flag="--toy",
        help="run the targets as the toy system's tasks",
        job="toy submission",
        queue="the toy",
        task_column="toy task",
        lost_because="the toy lost it",
        task="its toy task (submission {job}, task {index}{on})",
        running="{what}: toy submission {jobs} still runs",
        follow="toy submission {jobs} still runs",
        task_command="toy-task",
        task_help="(used by the toy) run one task",
        task_index_help="the task's index",
    )
    retries_its_index = False
    shows_gpus_set = False

    def prepare(self, choice: BackendRequest, loaded: LoadedCampaign, plan: Plan, root: Path) -> Prepared[None]:
        return Prepared(root, None)

    def start(self, prepared: Prepared[None], opened: OpenRun, reporter: Reporter, stop: StopRequest) -> Started:
        root = opened.store.run.root
        done = submitted(opened, ToySender(), self.words.flag)
        return Started(root, submission=done[-1] if done else None, said=(f"toy: {len(done)} submissions",))

    def plan_text(self, prepared: Prepared[None], plan: Plan, units: Sequence[Unit], run_dir: Path) -> str:
        return task_lines(run_dir, 1, len(units))

    def active_jobs(self, job_ids: list[str]) -> set[str] | None:
        return set()  # a submission has run to its end when it was sent

    def task_index(self, listing: TaskList, array: int, given: int | None) -> int:
        return int(given or 0)

    def task_placement(self, store: RunStore, listing: TaskList, index: int) -> TaskPlacement:
        job = str(listing.job_id)  # named before it was sent (batch/submission.py's Draft)
        return TaskPlacement(
            backend=self.name,
            job_id=f"{job}-{index}",
            array_job_id=job,
            array_task_id=index,
            node=socket.gethostname(),
            cuda_visible_devices=None,
            record=BatchFiles(store).record_path(job, index),
        )

    def what_it_printed(self, job: str, index: int, tail: str | None) -> str:
        return "it printed nothing"


TOY = ToySystem()
