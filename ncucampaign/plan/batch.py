"""What every batch system's plan shares (a Slurm array, a Kubernetes Indexed Job): one task per unit
(an invocation, or a group sharing one application run), the GPUs a task needs, and the grace before
its time limit in which the runner stops its ncu the usual way. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.units import Unit, invocations_of


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
