"""What a shared run hands back: the records it finished, and the members that must run alone (with
why); and the one record a shared run finishes without profiling, a miss decided on the trace."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ncucampaign.execute.attempt.classify import ConsoleSummary
from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.attempt.diagnose import diagnose
from ncucampaign.execute.attempt.trace_hints import trace_hints
from ncucampaign.execute.rundir.manifest import Obtained, TargetRecord, TraceInfo
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.trace.selection import Short, TraceSelections
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.launches import short_name
from ncucampaign.plan.share.union import filter_words


@dataclass(frozen=True)
class Alone:
    """A member the shared run hands back: it runs on its own."""

    member: Invocation  # as planned (not pinned to the group's GPUs)
    reason: str
    shared_run: str | None = None  # the shared run it was to be split from, when there was one
    detail: str = ""  # the reason with every kernel's symbol, where it names kernels
    past_trace: str | None = None  # the key of the trace it lies beyond: a miss of its own run is kept beside it


@dataclass(frozen=True)
class Refused:
    """A member whose split of a shared run was not used."""

    member: Invocation
    shared_run: str
    reason: str
    detail: str = ""

    @property
    def why(self) -> str:
        return f"its split of {self.shared_run} was not used: {self.reason}"


@dataclass(frozen=True)
class Failed:
    """A union that failed: how, the members it leaves (all of them, but those a union of identical filters decided),
    why (for them), and which shared run it was."""

    status: Status
    members: list[Invocation]
    why: str
    run: str
    kernel: str | None = None  # the kernel ncu said it failed to profile (shared/refusal.py)


@dataclass
class SharedOutcome:
    done: list[TargetRecord] = field(default_factory=list)  # split and verified, or interrupted
    alone: list[Alone] = field(default_factory=list)  # in the order they were handed back
    planned: list[tuple[str, ...]] = field(default_factory=list)  # a pool's first stage: its unions, not yet run
    trace: TraceInfo | None = None  # the trace it ran on (a pool's first stage hands it to the second)


class Handing:
    """How a shared run hands members back (to run alone) and marks their records, its outcome filled as it goes.
    `planned`: the group's members as planned (not pinned to a lane's GPUs)."""

    def __init__(self, ctx: RunContext, planned: Sequence[Invocation]) -> None:
        self.ctx = ctx
        self.outcome = SharedOutcome()
        self.planned = {m.name: m for m in planned}
        self.refusals: dict[str, Refused] = {}  # the first refusal of each member that was regrouped

    def give_up(self, members: Sequence[Invocation], why: str, shared: str | None = None) -> None:
        """Nothing shared can serve `members`: interrupted when stopping, else each runs alone."""
        if not self.ctx.stop.level:
            return self.alone(members, why, shared)
        self.mark(members, Status.INTERRUPTED, why)
        self.outcome.done.extend(self.ctx.record(m.name) for m in members)

    def alone(self, members: Sequence[Invocation], reason: str, shared: str | None = None, detail: str = "") -> None:
        """Hand `members` back; one regrouped after a refusal says why its first split was unused, then the retry's."""
        for m in members:
            first = self.refusals.get(m.name)
            if first is None:
                self.outcome.alone.append(Alone(self.planned[m.name], reason, shared, detail))
                continue
            why = f"{first.why}; regrouped: {reason}"
            details = "; ".join(filter(None, [first.detail, detail]))
            self.outcome.alone.append(Alone(self.planned[m.name], why, shared or first.shared_run, details))

    def mark(self, members: Sequence[Invocation], status: Status, message: str) -> None:
        def change() -> None:
            for member in members:
                self.ctx.record(member.name).status = status
                self.ctx.record(member.name).message = message

        self.ctx.book.commit(change, *(self.ctx.record(member.name) for member in members))


def decide_miss(ctx: RunContext, short: Short, found: TraceSelections, confirmed: str = "") -> TargetRecord:
    """Decided on the trace: its own run would profile nothing (no application start of its own).
    `confirmed`: how ncu's own runs confirmed a trace whose listing is not ncu's."""
    member = short.member
    record = ctx.record(member.name)
    names = found.names
    kernels = tuple(dict.fromkeys(names.get(launch.symbol) or short_name(launch.symbol) for launch in found.every))
    hints = trace_hints(member.options, (launch.nvtx for launch in found.every), short.selected) or diagnose(
        member.options, ConsoleSummary(no_kernels=True, available_kernels=kernels), Status.NO_KERNELS
    )
    trace = f"{found.info.report}, by {found.trace.tracer.label}" + (f"; {confirmed}" if confirmed else "")

    def missed() -> None:
        record.status = Status.NO_KERNELS
        record.message = "no kernels were profiled: the filters matched nothing in the discovery trace"
        record.diagnosis = hints
        record.obtained = Obtained(
            how="trace",
            reason=f"the discovery trace ({trace}) ran the application to its end and its filters select "
            "no launch it would profile (--no-share runs it on its own)",
        )

    ctx.book.commit(missed, record)
    return record


def settled(
    ctx: RunContext,
    found: TraceSelections,
    misses: Sequence[Short],
    verified: Mapping[tuple[str, ...] | None, int],
    refused: int,
) -> tuple[list[TargetRecord], list[tuple[Invocation, str]]]:
    """The misses on a trace whose listing is not ncu's own: closed on it only where ncu's runs confirmed the trace
    for that miss's own filters (`verified`: splits verified against it, by their filters; none `refused`): a kernel
    the other tracer names otherwise is missed by its filters alone, whatever other splits verified. Otherwise
    handed back with why, to run alone."""
    decided, undecided = [], []
    label = found.trace.tracer.label
    for short in misses:
        same = verified.get(tuple(filter_words(short.member.options)), 0) if not refused else 0
        if same:
            confirmed = f"{same} splits of its own filters verified against it confirmed it"
            decided.append(decide_miss(ctx, short, found, confirmed))
        else:
            why = f"in the discovery trace by {label}, which no verified split of its filters confirmed: its own run"
            why += " decides"
            undecided.append((short.member, f"{short.reason} {why}"))
    return decided, undecided
