"""What a campaign costs before it runs, as `validate` says it of a large file: application starts and seconds with
every target alone and with sharing, at plan/share/cost.py's prices (uncalibrated: no run has measured this
machine). A trace pool's unions are known only once its trace is (the run partitions it); here it is counted at its
fewest, its wanted launches UNION_LAUNCHES a union. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ncucampaign.plan.share.cost import (
    TRACE_S,
    UNCALIBRATED,
    UNION_LAUNCHES,
    alone_seconds,
    group_s,
    group_seconds,
    per_launch_s,
)
from ncucampaign.plan.share.groups import SharePlan

LARGE = 50  # invocations over which validate says what the file costs


@dataclass(frozen=True)
class Estimate:
    invocations: int
    alone_starts: int
    alone_s: float
    shared_starts: int  # at the fewest: a trace pool's unions are known only at run time
    traces: int
    shared_s: float


def estimate(shares: SharePlan) -> Estimate:
    """The cost of `shares` (a share_plan of every invocation) and of the same invocations each alone."""
    every = [m for g in shares.groups for m in g.members] + [inv for inv, _ in shares.alone]
    starts = len(shares.alone)
    seconds = sum(alone_seconds(inv) for inv, _ in shares.alone)
    traces = 0
    for group in shares.groups:
        if group.window == "trace":
            wanted = sum(m.options.launch_count or 1 for m in group.members)
            replay = sum((m.options.launch_count or 1) * per_launch_s(m.options) for m in group.members)
            unions = math.ceil(wanted / UNION_LAUNCHES)
            traces += 1
            starts += 1 + unions
            seconds += TRACE_S + group_seconds(replay, len(group.members)) + (unions - 1) * UNCALIBRATED.start_s
        else:
            starts += 1
            seconds += group_s(group.members, group.window)
    alone = sum(alone_seconds(inv) for inv in every)
    return Estimate(len(every), len(every), alone, starts, traces, seconds)


def estimate_line(cost: Estimate) -> str:
    """'10000 ncu invocations: 10000 application starts alone (about 31 h); shared, 45 at the fewest (1 trace; about
    1.2 h), at plan/share/cost.py's prices'."""
    traces = f"{cost.traces} trace{'s' if cost.traces != 1 else ''}; " if cost.traces else ""
    fewest = " at the fewest" if cost.traces else ""
    return (
        f"{cost.invocations} ncu invocations: {cost.alone_starts} application starts alone (about "
        f"{duration(cost.alone_s)}); shared, {cost.shared_starts}{fewest} ({traces}about {duration(cost.shared_s)}), "
        "at plan/share/cost.py's prices; `plan` shows the groups"
    )


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
