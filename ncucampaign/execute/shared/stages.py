"""A trace pool in stages, as a batch system runs it (backends/batch/pools.py): the first stage takes the pool's trace,
decides what the trace decides and plans the unions without running one; each union then runs on a task of its own,
on the pool's trace, with the members it was planned with. Here, a pool's stage is the whole pool."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ncucampaign.execute.rundir.manifest import TraceInfo
from ncucampaign.plan.expand import Invocation


@dataclass(frozen=True)
class PoolStage:
    """Which part of a trace pool a shared run does. `plan_only`: the first stage (the trace, its decisions, the
    unions planned and handed back in SharedOutcome.planned). `one_group`: a union of the second stage, its members
    the group as planned. `traced`: whose trace it runs on when not its members' own (the pool's members as its first
    stage traced them; on a resume, those of the run's earlier pool, whose trace it then finds kept)."""

    plan_only: bool = False
    one_group: bool = False
    traced: tuple[Invocation, ...] = ()
    trace: TraceInfo | None = None  # the trace the pool's first stage took: found under its key whatever this one's

    def trace_of(self, members: Sequence[Invocation]) -> list[Invocation]:
        """Whose trace it is: `traced`, else the group's own members."""
        return list(self.traced) if self.traced else list(members)


WHOLE = PoolStage()
