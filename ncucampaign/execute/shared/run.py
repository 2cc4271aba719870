"""One shared run: find the window (from the targets or the trace), profile the union once with the usual
attempts, split every member out of its report on import and verify each split (none is reported unverified).
Members whose splits were refused share one more run; those it cannot serve go back, with the reason, alone."""

from __future__ import annotations

from collections.abc import Callable

from ncucampaign.execute.attempt.attempts import run_attempts
from ncucampaign.execute.attempt.classify import parse_console
from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.attempt.shared_record import new_shared_record
from ncucampaign.execute.rundir.manifest import TraceInfo
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.shared.inferred import ENDED_SHORT, decided_short
from ncucampaign.execute.shared.outcome import Failed, Handing, Refused, SharedOutcome, decide_miss, settled
from ncucampaign.execute.shared.past_trace import kept_or_alone, past_the_trace
from ncucampaign.execute.shared.planning import measured, planned
from ncucampaign.execute.shared.refusal import apart, refused_kernel
from ncucampaign.execute.shared.resumed import kept_unions
from ncucampaign.execute.shared.split import SplitJob
from ncucampaign.execute.shared.splits import Splits
from ncucampaign.execute.shared.stages import WHOLE, PoolStage
from ncucampaign.execute.trace.cache.store import TraceCache
from ncucampaign.execute.trace.selection import Short, TraceSelections, composed_on, placed_members, trace_selections
from ncucampaign.own_time import CLOCK, TRACE_LISTING
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.gpus import pin
from ncucampaign.plan.share.cost import UNCALIBRATED, calibrated, per_launch_s
from ncucampaign.plan.share.groups import SharedGroup, union_for
from ncucampaign.plan.share.partition import held_still
from ncucampaign.plan.share.pricing import Placed
from ncucampaign.plan.share.union import renamed, trace_launches
from ncucampaign.plan.share.windows import MemberWindow, UnionWindow, targets_windows


def run_shared(
    ctx: RunContext,
    cache: TraceCache,
    group: SharedGroup,
    gpus: tuple[str, ...] | None,
    lane: str | None,
    stage: PoolStage = WHOLE,
) -> SharedOutcome:
    return _SharedRun(ctx, cache, group, gpus, lane, stage).run()


class _SharedRun:
    def __init__(
        self,
        ctx: RunContext,
        cache: TraceCache,
        group: SharedGroup,
        gpus: tuple[str, ...] | None,
        lane: str | None,
        stage: PoolStage,
    ) -> None:
        self.ctx, self.cache, self.group, self.gpus, self.lane, self.stage = ctx, cache, group, gpus, lane, stage
        self.members = [pin(m, gpus) if gpus else m for m in group.members]
        self.pool = stage.trace_of(self.members)  # whose trace (a pool's second stage: the pool's)
        self.hand = Handing(ctx, group.members)  # who is handed back, and their records marked
        self.outcome = self.hand.outcome
        self.placed: dict[str, Placed] = {}
        self.splits = Splits(ctx, self.hand)  # one split job at a time, in order, while the next union profiles
        self.names: dict[str, str] = {}  # the trace's symbol -> function name
        self.costs = UNCALIBRATED  # this machine's, once the trace is known: the partition and the veto agree
        self.unions: list[tuple[tuple[str, ...], float]] = []  # members and seconds of each union run on the trace
        self.unconfirmed: list[Short] = []  # misses on a trace whose listing ncu's own runs must confirm first

    def run(self) -> SharedOutcome:
        self.hand.mark(self.members, Status.RUNNING, "")
        with self.splits:
            if self.group.window == "trace":
                found = self._run_from_trace()
                refused = self.splits.collect()
                if found is not None:
                    self._regroup(refused, found)
                    refused = self.splits.collect()
                    self._settle(found)
            else:
                self._run_targets_window(self.members)
                refused = self.splits.collect()
        for r in refused:
            self.hand.alone([r.member], r.why, r.shared_run, r.detail)
        return self.outcome

    def _run_targets_window(self, members: list[Invocation]) -> None:
        """Identical filters: the window comes from the targets (exact by construction)."""
        failed = self._targets_window(members)
        if failed is not None and failed.status == Status.USAGE_ERROR:  # ncu refused the union whole
            self._halve(failed, self._targets_window)
        elif failed is not None:
            self.hand.give_up(failed.members, failed.why, failed.run)

    def _targets_window(self, members: list[Invocation]) -> Failed | None:
        union = union_for(members, "targets")
        union = pin(union, self.gpus) if self.gpus else union
        return self._profile(union, members, targets_windows(members), None, None)

    # --- the window ------------------------------------------------------------------------------------

    def _run_from_trace(self) -> TraceSelections | None:
        """One trace for the whole pool; then its misses decided, and the rest partitioned by cost."""
        self.ctx.reporter.phase(f"the discovery trace of {len(self.members)} targets")
        with CLOCK.phase(TRACE_LISTING):  # the trace's own run is ncu's time (own_time)
            found = trace_selections(self.ctx, self.cache, self.members, self.gpus, self.lane,
                                     trace_launches(self.pool), self.pool, self.stage.trace)  # fmt: skip
        if isinstance(found, str):
            self.hand.give_up(self.members, found)
            return None
        self.names, self.outcome.trace = found.names, found.info
        for short in found.never:  # the application ran to its end without these launches
            if not short.nothing_to_profile:
                self.hand.alone([short.member], short.reason)
            elif found.trace.tracer.needs_confirming:
                self.unconfirmed.append(short)  # decided once the union runs confirm the trace (_settle)
            else:
                self.outcome.done.append(decide_miss(self.ctx, short, found))
        closed, alone = past_the_trace(self.ctx, self.cache, found, self.group.members)
        self.outcome.done.extend(closed)
        self.outcome.alone.extend(alone)
        functions = found.functions or None
        placed = placed_members(self.members, found)
        self.placed = {p.member.name: p for p in placed}
        runs = self.cache.runs(found.info.key)
        self.costs = calibrated(found.info.seconds, len(found.every) * (found.info.launch_s or 0.0), functions, runs)
        if not self.stage.plan_only and not self.stage.one_group:  # resumed: finished unions are read out
            placed = self._read_out_kept(found, placed)
        groups = self._groups(found, placed) if placed else []
        if groups is None:
            self.hand.give_up([p.member for p in placed], "stopped while its groups were planned")
            return found
        earlier = len(self.unions)
        for part in groups:
            members = [p.member for p in part]
            if len(members) < 2:
                self.hand.alone(
                    members, "sharing would cost more than its own run (its launches lie apart from others')"
                )
            elif self.stage.plan_only:  # the first stage of a pool on a batch system: its unions run elsewhere
                self.outcome.planned.append(tuple(m.name for m in members))
            else:
                self._run_trace_group(members, found)
        if groups and not self.stage.plan_only and not self.stage.one_group:  # a pool's measure: later runs hold still
            self.cache.keep_partition(found.info.key, measured(groups, self.unions[earlier:], self.costs))
        return found

    def _groups(self, found: TraceSelections, placed: list[Placed]) -> list[list[Placed]] | None:
        """The pool's groups of least cost, held still where a kept partition says; None: stopped meanwhile. A union
        of a pool's second stage is one group, as its first stage planned it."""
        if self.stage.one_group:
            return [placed]
        found_groups = planned(self.ctx, placed, self.costs)
        if found_groups is None:
            return None
        return held_still(found_groups, self.cache.kept_partition(found.info.key), self.costs)

    def _read_out_kept(self, found: TraceSelections, placed: list[Placed]) -> list[Placed]:
        """The members left once the unions a stopped run finished are read out, each recomposed as it was."""
        pending = {p.member.name for p in placed}
        for record in kept_unions(self.ctx.book.manifest, self.ctx.run.root, pending, found.info.key):
            group = [self.placed[name] for name in record.members]
            composed = composed_on(self.ctx, self.cache, found, group, union_for(self.pool, "trace"), self.costs)
            if composed.union is None or composed.window is None or record.report is None:
                continue  # not as it was: its members share again
            members = [p.member for p in group]
            self.hand.mark(members, Status.RUNNING, f"read out of {record.name} on resume")
            console = parse_console(self.ctx.store.read_log(record.name, 0))
            report, windows = self.ctx.run.root / record.report.path, dict(composed.windows)
            job = SplitJob(record, renamed(composed.union, record.name), tuple(members), windows, composed.window,
                           report, console, self.names)  # fmt: skip
            self.splits.submit(job, resumed=True)
            pending -= set(record.members)
        return [p for p in placed if p.member.name in pending]

    def _settle(self, found: TraceSelections) -> None:
        """The misses on a trace whose listing is not ncu's own (outcome.settled)."""
        verified = self.splits.verified
        decided, undecided = settled(self.ctx, found, self.unconfirmed, verified, verified[None])
        closed, alone = kept_or_alone(self.ctx, self.cache, found, undecided, self.group.members)
        self.outcome.done.extend([*decided, *closed])
        self.outcome.alone.extend(alone)  # interrupted before their own runs when stopping (execute/units.py)

    def _regroup(self, refused: list[Refused], found: TraceSelections) -> None:
        """The members whose splits were refused share one more run (its window from the trace, as any group's); a
        member runs alone only when that split is refused too, or when it is the only one."""
        if len(refused) < 2 or self.ctx.stop.level:
            for r in refused:
                self.hand.alone([r.member], r.why, r.shared_run, r.detail)
            return
        self.hand.refusals = {r.member.name: r for r in refused}
        self._run_trace_group([r.member for r in refused], found)

    def _run_trace_group(self, members: list[Invocation], found: TraceSelections) -> None:
        """One group on the trace, halved while it fails (_halve)."""
        failed = self._trace_group(members, found)
        if failed is not None:
            self._halve(failed, lambda part: self._trace_group(part, found))

    def _trace_group(self, members: list[Invocation], found: TraceSelections) -> Failed | None:
        """One group on the trace, composed whole (trace/selection.py), then its union run and splits: what failed."""
        placed = [self.placed[m.name] for m in members]
        composed = composed_on(self.ctx, self.cache, found, placed, union_for(self.pool, "trace"), self.costs)
        if composed.union is None or composed.window is None:
            self.hand.alone(members, composed.why_not)
            return None
        union = pin(composed.union, self.gpus) if self.gpus else composed.union
        return self._profile(union, members, dict(composed.windows), composed.window, found.info)

    def _halve(self, failed: Failed, again: Callable[[list[Invocation]], Failed | None]) -> None:
        """A failed union's members share in halves (a half of one runs alone), and a half that fails is halved in
        turn, so that a member at fault ends up alone and the others share: ncu refused the union's command line (a
        section, set or option one member asks for), or the union failed in a way one member may cause (a kernel
        whose replay hangs, a crash, a timeout). When both halves fail as the union did, the cause is all of theirs:
        each member runs alone (ncu's refusals aside, which are one member's). A kernel ncu failed to profile parts
        the members by it instead of halves (shared/refusal.py): those that cannot select it share apart."""
        half, split = len(failed.members) // 2, apart(failed.members, failed.kernel)
        parts = list(split) if split else [failed.members[:half], failed.members[half:]]
        results = [
            Failed(failed.status, part, failed.why, failed.run) if len(part) < 2 or self.ctx.stop.level else again(part)
            for part in parts
        ]
        alike = all(r is not None and r.status == failed.status for r in results)
        for result in (r for r in results if r is not None):
            if len(result.members) < 2 or self.ctx.stop.level or (alike and result.status != Status.USAGE_ERROR):
                self.hand.give_up(result.members, result.why, result.run)
            else:
                self._halve(result, again)

    # --- the union run and its splits --------------------------------------------------------------------

    def _profile(
        self,
        union: Invocation,
        members: list[Invocation],
        windows: dict[str, MemberWindow],
        trace_window: UnionWindow | None,
        trace: TraceInfo | None,
    ) -> Failed | None:
        """Profile the union and split it; what failed, with the members it leaves, or None (stopping: none starts)."""
        ctx = self.ctx
        if ctx.stop.level:
            self.hand.give_up(members, "interrupted before its shared run started")
            return None
        record = new_shared_record(ctx, union, members, self.group.window, self.gpus)
        if trace is not None:
            ctx.book.commit(lambda: setattr(record, "trace", trace), record)
        union = renamed(union, record.name)
        self.hand.mark(members, Status.RUNNING, f"in shared run {record.name}")
        ctx.reporter.phase(f"{record.name}: one application run for {len(members)} targets")
        run_attempts(ctx, union, record.argv, record, self.lane, read_results=False)
        why = f"its shared run {record.name} ended {record.status.value}: {record.message}"
        if record.status == Status.USAGE_ERROR and len(members) > 1 and not ctx.stop.level:
            return Failed(record.status, members, "ncu refused the shared run's command line", record.name)
        console = parse_console(ctx.store.read_log(union.name, 0))
        holds: dict[str, int] = {}
        if record.status in ENDED_SHORT and trace is None and not ctx.stop.level:  # identical filters: exact
            short = decided_short(ctx, record, members, windows, console)
            self.outcome.done.extend(short.decided)
            members, holds = [m for m in members if m.name in short.split], short.split
            if not members:
                return None
        if record.report is None or (record.status != Status.OK and not holds):
            return Failed(record.status, members, why, record.name, refused_kernel(console))
        report = ctx.run.root / record.report.path
        if trace is not None and console.profiled:  # this machine's costs, for later partitions
            self.cache.note_run(trace.key, record.seconds, console.profiled * per_launch_s(union.options))
            self.unions.append((tuple(m.name for m in members), record.seconds))
        # The splits (CPU) go on while the next group's run uses the GPU; their verdicts are taken in
        # order once every run is done (_collect).
        earlier = {name: f"{r.why}; regrouped into {record.name}" for name, r in self.hand.refusals.items()}
        job = SplitJob(
            record, union, tuple(members), windows, trace_window, report, console, self.names, earlier, holds
        )
        self.splits.submit(job)
        return None
