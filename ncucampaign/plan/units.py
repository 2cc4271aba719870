"""What the executors schedule (pure): units (one invocation, or a shared group) and their order. With several
GPU lanes the longest go first, timed by the campaign's previous run where it has one, so no lane ends alone
with one long target; and every batch system's plan: one task a unit."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.gpus import named_gpus
from ncucampaign.plan.share.cost import UNION_LAUNCHES, alone_seconds, group_s
from ncucampaign.plan.share.groups import SharedGroup, SharePlan

Unit = Invocation | SharedGroup


def invocations_of(unit: Unit) -> tuple[Invocation, ...]:
    return unit.members if isinstance(unit, SharedGroup) else (unit,)


def gpus_needed(unit: Unit) -> tuple[str, ...] | None:
    """GPUs the unit's own environment names (members of a group share one environment)."""
    return named_gpus(invocations_of(unit)[0])


def units_in_plan_order(batch: Sequence[Invocation], shares: SharePlan) -> list[Unit]:
    """Invocations running alone and groups, each group where its first member was planned."""
    first_of = {group.members[0].name: group for group in shares.groups}
    grouped = {m.name for group in shares.groups for m in group.members}
    units: list[Unit] = []
    for inv in batch:
        if inv.name in first_of:
            units.append(first_of[inv.name])
        elif inv.name not in grouped:
            units.append(inv)
    return units


def estimated_s(unit: Unit, previous: dict[str, float]) -> float:
    if isinstance(unit, SharedGroup):
        return group_s(unit.members, unit.window)
    return previous.get(unit.name, alone_seconds(unit))


def longest_first(units: Sequence[Unit], previous: dict[str, float]) -> list[Unit]:
    """Sorted by estimated seconds, longest first; ties keep plan order."""
    return sorted(units, key=lambda unit: -estimated_s(unit, previous))


Stage = Literal["trace", "unions"]  # a trace pool's two stages on a batch system
TRACE: Stage = "trace"
UNIONS: Stage = "unions"
MOST_UNION_TASKS = 64  # a pool's second stage at most: tasks beyond what the cluster runs at once only wait


@dataclass(frozen=True)
class ArrayTask:
    """One array task: the invocations it runs (several when they share one application run). A trace pool's task
    serves one stage of it (`stage`, `pool`: its index among the submission plan's pools): TRACE takes the pool's
    trace and plans its unions (then runs some), UNIONS runs the unions that plan holds, each taken by one task;
    `names` is then what it claims at its start (UNIONS: none), `invocations` what it may run."""

    names: tuple[str, ...]
    invocations: tuple[Invocation, ...]
    stage: Stage | None = None
    pool: int | None = None


def array_tasks(units: Sequence[Unit]) -> list[ArrayTask]:
    """One array task per unit: an invocation, or a group sharing one application run (a trace pool's first stage)."""
    return [_task(unit, pool) for pool, unit in _numbered(units)]


def union_tasks(units: Sequence[Unit]) -> list[ArrayTask]:
    """The second stage of each trace pool among `units`: as many tasks as the pool has unions at the fewest (its
    wanted launches UNION_LAUNCHES a union), and one for the members that run alone; none without a trace pool."""
    tasks: list[ArrayTask] = []
    for pool, unit in _numbered(units):
        if pool is not None and isinstance(unit, SharedGroup):
            count = min(MOST_UNION_TASKS, fewest_unions(unit.members) + 1)
            tasks.extend(ArrayTask((), unit.members, UNIONS, pool) for _ in range(count))
    return tasks


@dataclass(frozen=True)
class Submitted:
    """One submission as planned: its number in the run, its tasks, each task's part of a trace pool (pool name,
    stage; None: none), and the first tasks (submission number, index) it starts after (a pool's second stage)."""

    number: int
    tasks: tuple[ArrayTask, ...]
    roles: tuple[tuple[str, Stage] | None, ...]
    after: tuple[tuple[int, int], ...] = ()


def submissions(units: Sequence[Unit], most: int, first: int, holds_back: bool = True) -> list[Submitted]:
    """`units` as submissions of at most `most` tasks each, numbered from `first`: every unit a task (a trace pool's
    first stage among them), then each pool's second stage, in submissions after the first stage's (`holds_back`: the
    system starts them once the first tasks end), else after them in the same ones (their tasks wait for the plan).
    A pool is named p<n>.<i>: the submission and index of its first task."""
    most, done = max(1, most), list[Submitted]()
    stage_one, stage_two = array_tasks(units), union_tasks(units)
    firsts: dict[int, tuple[int, int]] = {}
    for tasks in (stage_one, stage_two) if holds_back else ([*stage_one, *stage_two],):
        for at in range(0, len(tasks), most):
            number, chunk = first + len(done), tuple(tasks[at : at + most])
            for index, task in enumerate(chunk):
                if task.stage == TRACE and task.pool is not None:
                    firsts[task.pool] = (number, index)
            roles = tuple(_role(task, firsts) for task in chunk)
            waits = [firsts[t.pool] for t in chunk if t.stage == UNIONS and t.pool is not None] if holds_back else []
            after = tuple(dict.fromkeys(waits))
            done.append(Submitted(number, chunk, roles, after))
    return done


def pool_name(first_task: tuple[int, int]) -> str:
    return f"p{first_task[0]}.{first_task[1]}"


def _role(task: ArrayTask, firsts: dict[int, tuple[int, int]]) -> tuple[str, Stage] | None:
    if task.stage is None or task.pool is None:
        return None
    return pool_name(firsts[task.pool]), task.stage


def fewest_unions(members: Sequence[Invocation]) -> int:
    wanted = sum(m.options.launch_count or 1 for m in members)
    return max(1, math.ceil(wanted / UNION_LAUNCHES))


def _numbered(units: Sequence[Unit]) -> list[tuple[int | None, Unit]]:
    """Each unit with its pool's index (trace pools in order), None for the rest."""
    found: list[tuple[int | None, Unit]] = []
    pools = 0
    for unit in units:
        if isinstance(unit, SharedGroup) and unit.window == "trace":
            found.append((pools, unit))
            pools += 1
        else:
            found.append((None, unit))
    return found


def _task(unit: Unit, pool: int | None) -> ArrayTask:
    invocations = invocations_of(unit)
    stage = TRACE if pool is not None else None
    return ArrayTask(tuple(i.name for i in invocations), invocations, stage, pool)


def gpus_per_task(invocations: Sequence[Invocation]) -> int:
    """`devices: [0, 2]` indexes the GPUs a task sees: it needs three."""
    return max((max(inv.options.devices) + 1 if inv.options.devices else 1) for inv in invocations)


def signal_grace(invocations: Sequence[Invocation]) -> int:
    """Seconds before the time limit that the runner gets SIGINT: room for ncu to write its report
    (stop_grace after SIGINT, again after SIGTERM) and for the runner to save its record."""
    return max(60, math.ceil(2 * max((inv.stop_grace for inv in invocations), default=20.0) + 30))
