"""What the executors schedule (pure): units (one invocation, or a shared group) and their order. With several
GPU lanes the longest go first, timed by the campaign's previous run where it has one, so no lane ends alone
with one long target; and every batch system's plan: one task a unit."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.gpus import named_gpus
from ncucampaign.plan.share.cost import alone_seconds, group_s
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


@dataclass(frozen=True)
class ArrayTask:
    """One array task: the invocations it runs (several when they share one application run)."""

    names: tuple[str, ...]
    invocations: tuple[Invocation, ...]


def array_tasks(units: Sequence[Unit]) -> list[ArrayTask]:
    """One array task per unit: an invocation, or a group sharing one application run."""
    return [ArrayTask(tuple(i.name for i in invocations_of(u)), invocations_of(u)) for u in units]


def gpus_per_task(invocations: Sequence[Invocation]) -> int:
    """`devices: [0, 2]` indexes the GPUs a task sees: it needs three."""
    return max((max(inv.options.devices) + 1 if inv.options.devices else 1) for inv in invocations)


def signal_grace(invocations: Sequence[Invocation]) -> int:
    """Seconds before the time limit that the runner gets SIGINT: room for ncu to write its report
    (stop_grace after SIGINT, again after SIGTERM) and for the runner to save its record."""
    return max(60, math.ceil(2 * max((inv.stop_grace for inv in invocations), default=20.0) + 30))
