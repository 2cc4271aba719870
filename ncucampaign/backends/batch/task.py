"""A batch task's side, for every system: one task (a Slurm array task, a pod) claims its targets and runs them
with a local run's attempts into its own record file, which `collect` merges. It never takes the run directory's
lock nor sets CUDA_VISIBLE_DEVICES; its placement comes from its system's folder."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from ncucampaign.backends.batch.collect import UNFINISHED, died
from ncucampaign.backends.batch.files import BatchFiles, Claim, task_stem
from ncucampaign.backends.contract import BatchSystem
from ncucampaign.execute.attempt.context import Reporter, RunContext, SerialReporter
from ncucampaign.execute.executors import SequentialExecutor
from ncucampaign.execute.prepare import RunSettings
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.book import RecordBook, now_iso, pending_record
from ncucampaign.execute.rundir.manifest import Manifest, TargetRecord, TaskPlacement
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.trace.cache import TraceCache
from ncucampaign.execute.units import RunResult, UnitRunner, execute_units
from ncucampaign.plan.argv import ncu_argv
from ncucampaign.plan.expand import Invocation, Plan
from ncucampaign.plan.gpus import VISIBLE
from ncucampaign.plan.share.groups import share_plan
from ncucampaign.plan.units import units_in_plan_order


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


def run_task(
    store: RunStore,
    plan: Plan,
    settings: RunSettings,
    reporter: Reporter,
    stop: StopRequest,
    main: Manifest,
    names: Sequence[str],
    where: TaskPlacement,
    system: BatchSystem[Any],
) -> RunResult | None:
    """Claim and run `names` where `where` says (its system's placement); None when every one of them was claimed by
    another task already. A task that retries its index (a system that `retries_its_index`: Kubernetes starts a new pod
    after a killed one) takes over the claims of its own index, and starts from what the killed task recorded."""
    files = BatchFiles(store)
    by_name = {inv.name: system_gpus_kept(inv) for inv in plan.invocations}
    claim = Claim(**where.model_dump(), pid=os.getpid(), claimed_at=now_iso())
    retry = system.retries_its_index
    earlier = _earlier_task(files, where, system) if retry else None
    claimed = [
        by_name[name]
        for name in names
        if name in by_name and (files.claim(name, claim) or (retry and _take_over(files, name, where, claim)))
    ]
    if not claimed:
        return None
    store.make_folders()
    # No lock: the tasks of an array write into the run directory side by side, each its own files.

    def write_record(data: Any) -> None:
        store.write_json(where.record, data)

    book = RecordBook(
        task_manifest(earlier or main, claimed, where, store, settings.ncu_path),
        write_record,
        shared_prefix=f"shared/{task_stem(where.array_job_id, where.array_task_id)}-",
    )
    book.save()
    ctx = RunContext(store, book, settings.reader, SerialReporter(reporter), stop, settings.ncu_path)
    shares = share_plan(claimed, settings.share, settings.installed, settings.refused)
    alone = {i.name: why for i, why in shares.alone}
    runner = UnitRunner(ctx, TraceCache(settings.runs_root.absolute()), alone, settings.refused)
    units = units_in_plan_order(claimed, shares)
    task_plan = dataclasses.replace(plan, invocations=tuple(claimed))
    return execute_units(ctx, task_plan, units, SequentialExecutor(), runner, 0)


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
