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
from ncucampaign.execute.rundir.task_list import BATCH, TaskList, TaskRole
from ncucampaign.plan.share.groups import share_plan
from ncucampaign.plan.units import ArrayTask, Submitted, submissions, units_in_plan_order


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

    @property
    def holds_back(self) -> bool:
        """Whether a submission can be held back until given tasks of an earlier one end (Slurm's --dependency)."""
        ...

    def draft(self, run: OpenRun, number: int, tasks: Sequence[ArrayTask], after: Sequence[str]) -> Draft:
        """Submission `number`, for these tasks; `after`: the tasks (<submission id>_<index>) it should start after,
        where the system can hold it back (a pool's second stage after its first task: backends/batch/pools.py)."""
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
    """The units as tasks, in as many submissions as the system takes (plan/units.py's submissions: a trace pool's
    second stage after its first task, where the system can hold it back)."""
    files = BatchFiles(run.store)
    files.make_folders()
    shares = share_plan(run.to_run, run.settings.share, run.settings.installed, run.settings.refused)
    units, first = units_in_plan_order(run.to_run, shares), len(run.manifest.submissions) + 1
    planned = submissions(units, sender.most, first, sender.holds_back)
    jobs: dict[int, str] = {}
    done = []
    for one in planned:
        after = tuple(f"{jobs[number]}_{index}" for number, index in one.after if jobs.get(number))
        done.append(_submit_one(run, files, sender, one, after))
        jobs[one.number] = str(done[-1].job_id)
    return done


def _submit_one(run: OpenRun, files: BatchFiles, sender: Sender, one: Submitted, after: Sequence[str]) -> Submission:
    number, tasks = one.number, one.tasks
    names = [list(task.names) for task in tasks]
    for task in names:  # a target rerun by this submission may be claimed again
        for name in task:
            files.retire_claim(name, f"array-{number}")
    # A system that cannot hold a pool's second stage back (it shares the first task's submission, its tasks waiting
    # for the plan) has the first task take unions too: were every waiting task to give up first, it runs them all.
    waits = not sender.holds_back  # held back, a second stage starts once the first task ended: no plan, no wait
    roles = [
        TaskRole(pool=role[0], stage=role[1], then_unions=waits, waits=waits) if role else None for role in one.roles
    ]
    draft = sender.draft(run, number, tasks, after)
    listing = TaskList(
        tasks=names,
        share=run.settings.share,
        backend=sender.backend,
        job_id=draft.job_id,
        roles=roles if any(roles) else None,
    )
    listing.write(run.store, number)
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
        after=list(after),
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
