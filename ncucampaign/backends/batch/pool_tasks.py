"""The tasks of a trace pool's two stages on a batch system (backends/batch/pools.py): the first takes the pool's
trace and plans its unions; each task of the second takes the plan's units one at a time, as a batch task runs its
targets (task.py), each unit into a record of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ncucampaign.backends.batch.pools import PoolFiles, PoolPlan, PoolUnit, beating, earlier_pool, wait_for_plan
from ncucampaign.backends.batch.task import Task, claimed_by, shared_prefix
from ncucampaign.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TARGETS_FAILED
from ncucampaign.execute.rundir.book import RecordBook
from ncucampaign.execute.rundir.journal import ManifestFiles
from ncucampaign.execute.rundir.manifest import TraceInfo
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.shared.stages import PoolStage
from ncucampaign.execute.units import RunResult, UnitRunner
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.groups import SharedGroup, union_for


def run_pool_first(task: Task, names: Sequence[str], pool: str, then_unions: bool = False) -> int | None:
    """A pool's first stage: claim its members, take its trace and plan its unions (deciding what the trace
    decides), write the plan; the second stage's tasks run them (`then_unions`: this one too). None: another task
    claimed them all."""
    claimed, earlier = claimed_by(task, names)
    if not claimed:
        return None
    files = PoolFiles(task.store, pool)
    before = earlier_pool(task.store, [inv.name for inv in claimed], pool)  # a resume's: its trace is this run's
    traced = _traced(task, before) if before is not None else tuple(claimed)
    stage = PoolStage(plan_only=True, traced=traced, trace=before.trace if before is not None else None)
    with beating(files):
        result, runner = task.run(
            claimed, task.where, shared_prefix(task.where), earlier,
            runner_of=lambda ctx: UnitRunner(ctx, task.traces, {}, task.settings.refused, stage),
        )  # fmt: skip
        units = [unit for outcome in runner.planned for unit in _units(outcome.planned, outcome.alone)]
        trace = next((outcome.trace for outcome in runner.planned if outcome.trace), None)
        members = [inv.name for inv in traced]
        plan = PoolPlan(pool=pool, members=members, trace=trace, units=units, planned_by=task.where.record)
        first = _planned(task, result, units, pool)
        files.write_plan(plan)
    if not then_unions or first == EXIT_INTERRUPTED or not units:
        return first
    return _worst([first, run_pool_units(task, pool)])


def run_pool_units(task: Task, pool: str, wait: bool = True) -> int:
    """A pool's second stage: once the plan is there, take its units one at a time and run each (`wait`: the first
    task may still run; else a plan not there now never comes)."""
    files = PoolFiles(task.store, pool)
    plan = wait_for_plan(files, task.stop, wait)
    if isinstance(plan, str):
        task.reporter.echo(f"pool {pool}: no units to run: {plan}")
        return EXIT_INTERRUPTED if task.stop.level else EXIT_OK
    traced = _traced(task, plan)
    codes = []
    for number, unit in enumerate(plan.units):
        if task.stop.level:
            codes.append(EXIT_INTERRUPTED)
            break
        if files.claim_unit(number, task.claim(task.where).model_dump_json()):
            codes.append(_run_unit(task, files, number, unit, traced, plan.trace))
    return _worst(codes)


def _run_unit(
    task: Task, files: PoolFiles, number: int, unit: PoolUnit, traced: tuple[Invocation, ...], trace: TraceInfo | None
) -> int:
    where = task.where.model_copy(update={"record": files.unit_record(number)})
    claim = task.claim(where)
    members = [task.by_name[name] for name in unit.names if name in task.by_name]
    for member in members:  # the unit's targets are this task's now: collect reads them from its record
        task.files.retire_claim(member.name, f"{files.pool}-{number}")
        task.files.claim(member.name, claim)
    prefix = f"shared/{files.pool}-{number}-"
    if unit.alone is not None:
        alone = {member.name: unit.alone for member in members}
        result, _ = task.run(
            members, where, prefix,
            runner_of=lambda ctx: UnitRunner(ctx, task.traces, alone, task.settings.refused),
        )  # fmt: skip
        return result.exit_code
    group = SharedGroup(1, tuple(members), union_for(members, "trace"), "trace")
    stage = PoolStage(one_group=True, traced=traced, trace=trace)
    result, _ = task.run(
        members, where, prefix, units=[group],
        runner_of=lambda ctx: UnitRunner(ctx, task.traces, {}, task.settings.refused, stage),
    )  # fmt: skip
    return result.exit_code


def _traced(task: Task, plan: PoolPlan) -> tuple[Invocation, ...]:
    """The members a pool's plan was traced with, its trace adopted as this run's own (kept or not)."""
    trace = plan.trace
    report = task.store.run.root / trace.report if trace is not None else None  # relative to the run, or absolute
    if trace is not None and report is not None and report.is_file():
        task.traces.adopt(trace.key, report, trace.launches, trace.seconds)
    return tuple(task.by_name[name] for name in plan.members if name in task.by_name)


def _units(unions: Sequence[tuple[str, ...]], alone: Sequence[Any]) -> list[PoolUnit]:
    found = [PoolUnit(names=list(names)) for names in unions]
    found += [PoolUnit(names=[a.member.name], alone=a.reason, shared_run=a.shared_run, detail=a.detail) for a in alone]
    return found


def _planned(task: Task, result: RunResult, units: Sequence[PoolUnit], pool: str) -> int:
    """The members the plan hands to the second stage, pending in the first task's record until a unit's task claims
    them (what collect says of them if none ever does); the first stage's exit code, of what it decided."""
    handed = {name: number for number, unit in enumerate(units) for name in unit.names}
    records = [record for record in result.manifest.targets if record.name in handed]

    def pending() -> None:
        for record in records:
            record.status = Status.PENDING
            record.message = f"planned into unit {handed[record.name]} of pool {pool}, for the pool's second stage"

    where = task.where
    book = RecordBook(result.manifest, lambda data: task.store.write_json(where.record, data), shared_prefix(where),
                      files=ManifestFiles(task.store, where.record))  # fmt: skip
    try:
        book.commit(pending, *records)
        book.save()
    finally:
        book.close()
    if task.stop.level:
        return EXIT_INTERRUPTED
    decided = [record for record in result.manifest.targets if record.name not in handed]
    return EXIT_OK if all(record.status == Status.OK for record in decided) else EXIT_TARGETS_FAILED


def _worst(codes: Sequence[int]) -> int:
    if EXIT_INTERRUPTED in codes:
        return EXIT_INTERRUPTED
    return EXIT_TARGETS_FAILED if any(code != EXIT_OK for code in codes) else EXIT_OK
