"""Handing an opened run to a batch system (sbatch, the Kubernetes API), the same steps for every system: what is
left to run as one task per unit, in as many submissions as the system takes; for each, the claims it reruns retired,
its task list and the file it submits written into the run directory, the submission sent and recorded. A refused
submission of a fresh run leaves no run behind (folder removed, `latest` as it was); one of a resumed run says how
to finish it. A system brings only what differs (a Sender): the file it submits, and how it sends it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ncucampaign.backends.batch.files import BatchFiles
from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.open_run import OpenRun
from ncucampaign.execute.rundir.book import now_iso
from ncucampaign.execute.rundir.manifest import Submission
from ncucampaign.execute.rundir.task_list import BATCH, TaskList
from ncucampaign.plan.share.groups import share_plan
from ncucampaign.plan.units import ArrayTask, array_tasks, units_in_plan_order


@dataclass(frozen=True)
class Draft:
    """One submission as its system writes it: the file it submits (slurm/array-<n>.<suffix>, and each name in
    `also`), how it is sent (given the file's path: the submission's id, or EnvironmentProblem when it is refused),
    and its id where the system names it before it is sent (a Kubernetes Job's namespace/name)."""

    suffix: str
    text: str
    send: Callable[[Path], str]
    job_id: str | None = None
    also: tuple[str, ...] = ()


class Sender(Protocol):
    """What one batch system brings to a submission."""

    @property
    def backend(self) -> str:
        """The system's name, as the manifest records it."""
        ...

    @property
    def most(self) -> int:
        """How many tasks one submission may hold (a larger one is refused whole)."""
        ...

    def draft(self, run: OpenRun, number: int, tasks: Sequence[ArrayTask]) -> Draft:
        """Submission `number`, for these tasks."""
        ...


def submitted(run: OpenRun, sender: Sender, flag: str) -> list[Submission]:
    """The submissions made of the opened run (none: every target is ok already); it lets go of the run. A refused
    one stops the rest (those submitted run on; --resume submits what is left)."""
    try:
        if not run.to_run:
            return []
        try:
            return _submit_all(run, sender)
        except EnvironmentProblem as exc:
            if run.settings.resume is None:  # nothing ran: no run directory left behind as `latest`
                run.close()  # the lock first: its file is in the folder that goes
                run.store.withdraw(run.latest_before)
                raise EnvironmentProblem(f"{exc}\nnothing was submitted and no run directory was kept") from None
            raise EnvironmentProblem(
                f"{exc}\nnothing was submitted; once that is mended, finish this run with: ncucampaign run --resume "
                f"{run.store.run.root} {flag}"
            ) from None
    finally:
        run.close()


def _submit_all(run: OpenRun, sender: Sender) -> list[Submission]:
    files = BatchFiles(run.store)
    files.make_folders()
    shares = share_plan(run.to_run, run.settings.share, run.settings.installed, run.settings.refused)
    tasks = array_tasks(units_in_plan_order(run.to_run, shares))
    most = max(1, sender.most)
    return [_submit_one(run, files, sender, tasks[start : start + most]) for start in range(0, len(tasks), most)]


def _submit_one(run: OpenRun, files: BatchFiles, sender: Sender, tasks: Sequence[ArrayTask]) -> Submission:
    number = len(run.manifest.submissions) + 1
    names = [list(task.names) for task in tasks]
    for task in names:  # a target rerun by this submission may be claimed again
        for name in task:
            files.retire_claim(name, f"array-{number}")
    draft = sender.draft(run, number, tasks)
    TaskList(tasks=names, share=run.settings.share, backend=sender.backend, job_id=draft.job_id).write(
        run.store, number
    )
    path = run.store.write_text(f"{BATCH}/array-{number}.{draft.suffix}", draft.text)
    for name in draft.also:
        run.store.write_text(f"{BATCH}/{name}", draft.text)
    record = Submission(
        number=number,
        backend=sender.backend,
        job_id=None,
        submitted_at=now_iso(),
        script=run.store.run.relative(path),
        tasks=names,
    )
    try:
        record.job_id = draft.send(path)
    except EnvironmentProblem:  # nothing (more) runs: the run is not "running", and it says how to finish it
        run.book.commit(lambda: run.manifest.submissions.append(record))
        run.book.commit(lambda: setattr(run.manifest, "state", "interrupted"))
        raise
    run.book.commit(lambda: run.manifest.submissions.append(record))
    run.book.commit(lambda: setattr(run.manifest, "state", "submitted"))
    return record
