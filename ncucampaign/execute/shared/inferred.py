"""What a union of identical filters that ended short says of its members: they differ only in their window (skip and
count), so a union that profiled P of its matches from the earliest member's skip on, because the application ended
first, says exactly what each member's own run would profile: a member whose window starts at or past P profiles
nothing (`no_kernels`), one that ends within P is split as usual, and one that straddles P holds what is left
(`incomplete`, as its own run would). Nothing starts for them again (a matrix over range instances a 4-step
application does not have made 600 targets start alone, each to find nothing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ncucampaign.execute.attempt.classify import ConsoleSummary
from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.attempt.diagnose import diagnose
from ncucampaign.execute.rundir.manifest import Obtained, SharedRunRecord, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.windows import MemberWindow

ENDED_SHORT = (Status.NO_KERNELS, Status.INCOMPLETE)  # a union's statuses that say where the application ended


@dataclass(frozen=True)
class ShortUnion:
    """The members of a union that ended short: those to split (with the results each can hold), and those decided."""

    split: dict[str, int] = field(default_factory=dict)  # member -> results its split holds (its count, or fewer)
    decided: list[TargetRecord] = field(default_factory=list)


def decided_short(
    ctx: RunContext,
    union: SharedRunRecord,
    members: Sequence[Invocation],
    windows: Mapping[str, MemberWindow],
    console: ConsoleSummary,
) -> ShortUnion:
    """`union` (a window from the targets) profiled `console.profiled` launches and ended; each member's due."""
    profiled = console.profiled if union.status == Status.INCOMPLETE else 0
    found = ShortUnion()
    for member in members:
        skip, count = windows[member.name].skip_in_union, member.options.launch_count or 1
        if skip >= profiled:
            found.decided.append(_nothing(ctx, union, member, console, profiled))
        else:
            found.split[member.name] = min(count, profiled - skip)
    return found


def _nothing(
    ctx: RunContext, union: SharedRunRecord, member: Invocation, console: ConsoleSummary, profiled: int
) -> TargetRecord:
    record, skip = ctx.record(member.name), member.options.launch_skip or 0
    where = f"{profiled} of its filters' launches" if profiled else "none of its filters' launches"
    reason = (
        f"its shared run {union.name} (the same filters) profiled {where} from the earliest member's skip on before "
        f"the application ended: its own run, {skip} launches on, would profile nothing"
    )
    if profiled:  # ncu connected and profiled: the count says why, never "ncu never connected" (round 7)
        hints = [
            f"{union.name} profiled {profiled} launch(es) of these filters from the earliest member's skip on before "
            f"the application ended: launch_skip {skip} lies past them"
        ]
    else:
        seen = ConsoleSummary(no_kernels=True, available_kernels=console.available_kernels, connected=console.connected)
        hints = diagnose(member.options, seen, Status.NO_KERNELS)

    def nothing() -> None:
        record.status = Status.NO_KERNELS
        record.message = f"no kernels were profiled: decided on {union.name}, which the application ended first"
        record.diagnosis = hints
        record.obtained = Obtained(how="shared", shared_run=union.name, reason=reason)

    ctx.book.commit(nothing, record)
    return record
