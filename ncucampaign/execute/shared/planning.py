"""A pool's groups planned on its trace (plan/share/partition.py's search), a slice at a time: the run says how far
it got, and a stop is answered between two slices (a pool of 10,000 plans for about 4 s)."""

from __future__ import annotations

from collections.abc import Sequence

from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.own_time import CLOCK, PLANNING
from ncucampaign.plan.share.cost import Costs, alone_seconds
from ncucampaign.plan.share.partition import KeptPartition, Search
from ncucampaign.plan.share.pricing import Placed


def measured(
    groups: list[list[Placed]], unions: Sequence[tuple[tuple[str, ...], float]], costs: Costs
) -> KeptPartition:
    """What the chosen groups measured: their shared runs' seconds (`unions`: members and seconds), and the priced own
    run of every member that ran alone; kept with the trace, so that later runs hold still (plan/share/partition)."""
    shared = {name for names, _ in unions for name in names}
    alone = sum(alone_seconds(p.member, costs) for g in groups for p in g if p.member.name not in shared)
    names = tuple(tuple(p.member.name for p in group) for group in groups)
    return KeptPartition(names, sum(seconds for _, seconds in unions) + alone)


def planned(ctx: RunContext, placed: Sequence[Placed], costs: Costs) -> list[list[Placed]] | None:
    """The groups of least estimated cost; None when the run was stopped meanwhile."""
    search = Search(placed, costs)
    with CLOCK.phase(PLANNING):
        for priced in search:
            ctx.reporter.phase(f"planning the shared runs of {len(placed)} targets", f"{priced:,} groups priced")
            if ctx.stop.level:
                return None
    return search.groups
