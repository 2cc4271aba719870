"""A batch task's side, for every system: one task (a Slurm array task, a pod) claims its targets and runs them
with a local run's attempts into its own record file, which `collect` merges. It never takes the run directory's
lock nor sets CUDA_VISIBLE_DEVICES; its placement comes from its system's folder. A task of a trace pool's stage
runs its part of the pool (pool_tasks.py)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ncucampaign.backends.batch.collect import UNFINISHED, died
from ncucampaign.backends.batch.files import BatchFiles, Claim, task_stem
from ncucampaign.backends.contract import BatchSystem
from ncucampaign.execute.attempt.context import Reporter, RunContext, SerialReporter
from ncucampaign.execute.executors import SequentialExecutor
from ncucampaign.execute.prepare import RunSettings
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.book import RecordBook, now_iso, pending_record
from ncucampaign.execute.rundir.journal import ManifestFiles
from ncucampaign.execute.rundir.manifest import Manifest, TargetRecord, TaskPlacement
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.trace.cache.store import TraceCache
from ncucampaign.execute.units import RunResult, UnitRunner, execute_units
from ncucampaign.own_time import CLOCK
from ncucampaign.plan.argv import ncu_argv
from ncucampaign.plan.expand import Invocation, Plan
from ncucampaign.plan.gpus import VISIBLE
from ncucampaign.plan.share.groups import share_plan
from ncucampaign.plan.units import Unit, units_in_plan_order


def system_gpus_kept(inv: Invocation) -> Invocation:
    """The invocation without a CUDA_VISIBLE_DEVICES of its own: the batch system's stands."""
    return dataclasses.replace(inv, env=tuple((k, v) for k, v in inv.env if k != VISIBLE))


def task_manifest(
    main: Manifest, claimed: Sequence[Invocation], where: TaskPlacement, store: RunStore, ncu_path: str
) -> Manifest:
    """The task's manifest: the run's, holding only the claimed targets (with their earlier attempts)."""
    previous = {record.name: record for record in main.targets}
    records: list[TargetRecord] = []
    for inv in claimed:
        fresh = pending_record(inv, ncu_argv(inv, ncu_path, store.run.reports, store.run.report_suffix), store.run)
        record = previous[inv.name].model_copy(deep=True) if inv.name in previous else fresh.model_copy()
        record.argv, record.env, record.shell_command = fresh.argv, fresh.env, fresh.shell_command
        record.status, record.placement = Status.PENDING, where
        records.append(record)
    update = {"state": "running", "started_at": now_iso(), "ended_at": None, "targets": records}
    return main.model_copy(update={**update, "shared_runs": [], "submissions": []})


@dataclass
class Task:
    """What every run in one batch task shares: the run directory, its plan and settings, the display, the stop, the
    run's manifest as the task found it, where the task runs and its system."""

    store: RunStore
    plan: Plan
    settings: RunSettings
    reporter: Reporter
    stop: StopRequest
    main: Manifest
    where: TaskPlacement
    system: BatchSystem[Any]

    def __post_init__(self) -> None:
        self.files = BatchFiles(self.store)
        self.by_name = {inv.name: system_gpus_kept(inv) for inv in self.plan.invocations}
        self.traces = TraceCache(self.settings.runs_root.absolute())
        self.runs = 0  # records this task has written

    def claim(self, where: TaskPlacement) -> Claim:
        return Claim(**where.model_dump(), pid=os.getpid(), claimed_at=now_iso())

    def run(
        self,
        claimed: Sequence[Invocation],
        where: TaskPlacement,
        prefix: str,
        earlier: Manifest | None = None,
        units: Sequence[Unit] | None = None,
        runner_of: Any = None,
    ) -> tuple[RunResult, UnitRunner]:
        """Run `claimed` into the record `where` names (`units`: as given, else as the share plan groups them). Its
        record's own seconds are this run's alone: a task that runs several (a pool's units) counts each once."""
        if self.runs:
            CLOCK.reset()  # what the task spent before is in its earlier records (its start-up in the first)
        self.runs += 1
        self.store.make_folders()
        # The record grows as a local run's manifest does: each change a line of its journal, the whole record now
        # and then (rewriting it at every change made a task of 1,000 targets spend 163 s of 175 on its records).
        book = RecordBook(
            task_manifest(earlier or self.main, claimed, where, self.store, self.settings.ncu_path),
            lambda data: self.store.write_json(where.record, data),
            shared_prefix=prefix,
            files=ManifestFiles(self.store, where.record),
        )
        book.save()
        s = self.settings
        ctx = RunContext(self.store, book, s.reader, SerialReporter(self.reporter), self.stop, s.ncu_path)
        shares = share_plan(claimed, s.share, s.installed, s.refused)
        alone = {i.name: why for i, why in shares.alone}
        runner = runner_of(ctx) if runner_of else UnitRunner(ctx, self.traces, alone, s.refused)
        chosen = list(units) if units is not None else units_in_plan_order(claimed, shares)
        task_plan = dataclasses.replace(self.plan, invocations=tuple(claimed))
        try:
            return execute_units(ctx, task_plan, chosen, SequentialExecutor(), runner, 0), runner
        finally:
            book.close()


def run_task(task: Task, names: Sequence[str]) -> RunResult | None:
    """Claim and run `names` where the task runs; None when every one of them was claimed by another task already.
    A task that retries its index (a system that `retries_its_index`: Kubernetes starts a new pod after a killed
    one) takes over the claims of its own index, and starts from what the killed task recorded."""
    claimed, earlier = claimed_by(task, names)
    if not claimed:
        return None
    return task.run(claimed, task.where, shared_prefix(task.where), earlier)[0]


def shared_prefix(where: TaskPlacement) -> str:
    """How a task names its shared runs: siblings share reports/shared/."""
    return f"shared/{task_stem(where.array_job_id, where.array_task_id)}-"


def claimed_by(task: Task, names: Sequence[str]) -> tuple[list[Invocation], Manifest | None]:
    """Those of `names` this task claims, and what a killed task of its index recorded (a system that retries it)."""
    claim, where, files = task.claim(task.where), task.where, task.files
    retry = task.system.retries_its_index
    earlier = _earlier_task(files, where, task.system) if retry else None
    claimed = [
        task.by_name[name]
        for name in names
        if name in task.by_name and (files.claim(name, claim) or (retry and _take_over(files, name, where, claim)))
    ]
    return claimed, earlier


def _take_over(files: BatchFiles, name: str, where: TaskPlacement, claim: Claim) -> bool:
    """A task retrying its index: the claim is its own index's (the killed task's); take it again."""
    held = files.read_claim(name)
    if not isinstance(held, Claim) or held.backend != where.backend:
        return False
    if (held.array_job_id, held.array_task_id) != (where.array_job_id, where.array_task_id):
        return False
    files.retire_claim(name, f"retry-{where.job_id}")
    return files.claim(name, claim)


def _earlier_task(files: BatchFiles, where: TaskPlacement, system: BatchSystem[Any]) -> Manifest | None:
    """What a killed task of this index recorded (its record is rewritten by this one): its targets'
    attempts, the unfinished ones marked interrupted, so that nothing recorded is lost."""
    found = files.read_record(where.record)
    if not isinstance(found, Manifest):
        return None
    targets = [died(t, where, system, None) if t.status in UNFINISHED else t for t in found.targets]
    return found.model_copy(update={"targets": targets})
