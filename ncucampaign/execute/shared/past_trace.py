"""The members a discovery trace cannot decide: beyond it (execute/trace/selection.py `beyond`), or missed on a trace
whose listing no verified split confirmed (outcome.settled). Each is closed on the miss its own run left beside the
kept trace (execute/trace/cache/kept_misses.py), or handed back to run alone, its miss to be kept."""

from __future__ import annotations

from collections.abc import Sequence

from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.rundir.manifest import Obtained, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.shared.outcome import Alone
from ncucampaign.execute.trace.cache.kept_misses import KeptMiss, miss_key
from ncucampaign.execute.trace.cache.store import TraceCache
from ncucampaign.execute.trace.selection import TraceSelections
from ncucampaign.plan.expand import Invocation


def past_the_trace(
    ctx: RunContext, cache: TraceCache, found: TraceSelections, planned: Sequence[Invocation]
) -> tuple[list[TargetRecord], list[Alone]]:
    """The members beyond the trace, closed on kept misses or run alone (kept_or_alone)."""
    return kept_or_alone(ctx, cache, found, [(member, found.beyond_reason) for member in found.beyond], planned)


def kept_or_alone(
    ctx: RunContext,
    cache: TraceCache,
    found: TraceSelections,
    handed: Sequence[tuple[Invocation, str]],
    planned: Sequence[Invocation],
) -> tuple[list[TargetRecord], list[Alone]]:
    """Members the trace cannot decide (with why): closed on the misses their own runs left beside it (when it is the
    kept one), or handed back to run alone, their misses to be kept (`planned`: the group's members as planned; the
    key is not of the GPUs a lane pins)."""
    kept = cache.misses(found.info.key) if handed and found.info.reused else {}
    by_name = {m.name: m for m in planned}
    closed, alone = [], []
    for member, why in ((by_name[m.name], why) for m, why in handed):
        miss = kept.get(miss_key(member))
        if miss is None:
            alone.append(Alone(member, why, past_trace=found.info.key))
        else:
            closed.append(decide_kept_miss(ctx, member, found, miss, why))
    return closed, alone


def decide_kept_miss(
    ctx: RunContext, member: Invocation, found: TraceSelections, miss: KeptMiss, why: str
) -> TargetRecord:
    """Closed on the miss its own run left beside the trace (trace/cache/kept_misses.py): no start of its own."""
    record = ctx.record(member.name)

    def missed() -> None:
        record.status = Status.NO_KERNELS
        record.message = f"no kernels were profiled: the filters matched nothing in its own run in run {miss.run}"
        record.diagnosis = list(miss.diagnosis)
        record.obtained = Obtained(
            how="trace",
            reason=f"{why}; its own run in run {miss.run} ran the application to its end and "
            f"profiled nothing, on this trace ({found.info.report}, the same command, environment, workload, ncu and "
            "GPU) with these options (--no-share runs it on its own)",
            miss_run=miss.run,
        )

    ctx.book.commit(missed, record)
    return record
