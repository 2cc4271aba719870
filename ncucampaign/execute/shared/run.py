"""One shared run: find the window (from the targets, or from the discovery trace), profile the union
once with the usual attempts, split every member out of its report on import and verify each split.
Nothing is reported from a split that was not verified: the members a shared run cannot serve are
handed back with the reason, and whoever runs units runs them alone (execute/units.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from ncucampaign.execute.attempt.attempts import run_attempts
from ncucampaign.execute.attempt.classify import ConsoleSummary, parse_console
from ncucampaign.execute.attempt.diagnose import diagnose
from ncucampaign.execute.context import RunContext
from ncucampaign.execute.rundir.manifest import Obtained, TargetRecord, TraceInfo
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.shared.imports import ImportFailed, Launch, importer_of, list_launches
from ncucampaign.execute.shared.partition import Placed, calibrated, partition, selected_ids
from ncucampaign.execute.shared.records import new_shared_record
from ncucampaign.execute.shared.selection import TraceSelections, trace_selections
from ncucampaign.execute.shared.split import Split, SplitJob, split_union
from ncucampaign.execute.shared.traces import TraceCache
from ncucampaign.execute.shared.windows import (
    MemberWindow,
    UnionWindow,
    member_window,
    picked_window,
    uncovered,
    union_window,
)
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.gpus import pin
from ncucampaign.plan.share import SharedGroup, pays, per_launch_s, union_for
from ncucampaign.plan.union import (
    TRACE_LAUNCHES,
    filter_words,
    import_csv_argv,
    picked,
    picks_possible,
    renamed,
    with_options,
)


@dataclass(frozen=True)
class Alone:
    """A member the shared run hands back: it runs on its own."""

    member: Invocation  # as planned (not pinned to the group's GPUs)
    reason: str
    shared_run: str | None = None  # the shared run it was to be split from, when there was one


@dataclass
class SharedOutcome:
    done: list[TargetRecord] = field(default_factory=list)  # split and verified, or interrupted
    alone: list[Alone] = field(default_factory=list)  # in the order they were handed back


def run_shared(
    ctx: RunContext, cache: TraceCache, group: SharedGroup, gpus: tuple[str, ...] | None, lane: str | None
) -> SharedOutcome:
    return _SharedRun(ctx, cache, group, gpus, lane).run()


class _SharedRun:
    def __init__(
        self,
        ctx: RunContext,
        cache: TraceCache,
        group: SharedGroup,
        gpus: tuple[str, ...] | None,
        lane: str | None,
    ) -> None:
        self.ctx, self.cache, self.group, self.gpus, self.lane = ctx, cache, group, gpus, lane
        self.members = [pin(m, gpus) if gpus else m for m in group.members]
        self.outcome = SharedOutcome()
        self.placed: dict[str, Placed] = {}
        self.splitting = ThreadPoolExecutor(1)  # replaced in run(): one split job at a time, in order
        self.pending: list[tuple[list[Invocation], str, Future[list[Split] | str]]] = []

    def run(self) -> SharedOutcome:
        self._mark(self.members, Status.RUNNING, "")
        with ThreadPoolExecutor(1) as self.splitting:
            if self.group.window == "trace":
                self._run_from_trace()
            else:
                self._run_targets_window(self.members)
        self._collect()
        return self.outcome

    def _run_targets_window(self, members: list[Invocation]) -> None:
        """Identical filters: the window comes from the targets (exact by construction)."""
        union = union_for(members, "targets")
        union = pin(union, self.gpus) if self.gpus else union
        windows = {m.name: (m.options.launch_skip or 0) - (union.options.launch_skip or 0) for m in members}
        if self._profile(union, members, windows, None, None):
            self._halve(members, lambda part: self._run_targets_window(part))

    # --- the window ------------------------------------------------------------------------------------

    def _run_from_trace(self) -> None:
        """One trace for the whole pool; then its misses decided, and the rest partitioned by cost."""
        found = trace_selections(self.ctx, self.cache, self.members, self.gpus, self.lane, TRACE_LAUNCHES)
        if isinstance(found, str):
            return self._give_up(self.members, found)
        for short in found.never:  # the application ran to its end without these launches
            if short.nothing_to_profile:
                self._missed(short.member, found)
            else:
                self._alone([short.member], short.reason)
        self._alone(found.beyond, f"its launches lie beyond the discovery trace's first {found.info.launches} launches")
        functions = found.functions or None
        placed = self._placed(found)
        self.placed = {p.member.name: p for p in placed}
        runs = self.cache.runs(found.info.key)
        for part in partition(placed, calibrated(found.info.seconds, len(found.every), functions, runs)):
            members = [p.member for p in part]
            if len(members) < 2:
                self._alone(
                    members, "sharing would cost more than its own run (its launches lie apart from the others')"
                )
            else:
                self._run_trace_group(members, found)

    def _placed(self, found: TraceSelections) -> list[Placed]:
        """The members the trace places, with what their filters select apart (for the union's window)."""
        members = [m for m in self.members if m.name in found.selected]
        placed = []
        for m in members:
            picked, wanted = found.selected[m.name]
            part = found.parts.get(m.name)
            ids, wanted_ids = tuple(x.id for x in picked), tuple(x.id for x in wanted)
            if part is None:  # priced from its own selection alone
                placed.append(Placed(m, ids, wanted_ids))
            else:
                placed.append(Placed(m, ids, wanted_ids, part.kernels, part.scope, part.family))
        return placed

    def _run_trace_group(self, members: list[Invocation], found: TraceSelections) -> None:
        union_inv = union_for(members, "trace")
        try:
            selected = self._union_selection(members, union_inv, found)
        except ImportFailed as exc:
            return self._alone(members, f"the discovery trace cannot be listed: {exc}")
        wanted = {m.name: found.selected[m.name][1] for m in members}
        union = union_window(selected, list(wanted.values()))
        if any(uncovered(wanted[m.name], union) for m in members):
            return self._alone(members, "the shared filter does not cover every target's launches")
        chosen = picked_window(selected, list(wanted.values()), found.functions)
        if chosen is None or not picks_possible(union_inv.options) or len(chosen.launches) >= len(union.launches):
            chosen = None  # every match in the window: no fewer launches to pick
        union = chosen or union
        if not pays(members, "trace", len(union.launches)):
            return self._alone(members, f"sharing would profile {len(union.launches)} launches: dearer than own runs")
        if chosen is not None:
            union_inv = picked(union_inv, chosen.invocations, len(chosen.launches), chosen.functions)
        else:
            union_inv = with_options(union_inv, launch_skip=union.skip or None, launch_count=len(union.launches))
        union_inv = pin(union_inv, self.gpus) if self.gpus else union_inv
        windows = {
            m.name: member_window(found.selected[m.name][0], m.options.launch_skip or 0, wanted[m.name], union)
            for m in members
        }
        if self._profile(union_inv, members, windows, union, found.info):
            self._halve(members, lambda part: self._run_trace_group(part, found))

    def _union_selection(self, members: list[Invocation], union: Invocation, found: TraceSelections) -> list[Launch]:
        """What the group's union filter selects in the trace. Without NVTX excludes it is what the
        members' kernel filters select, OR-ed, within their NVTX includes, OR-ed (docs/ncu-behaviour.md,
        "Shared runs"), known from the partition's listings; otherwise ncu lists it."""
        if filter_words(union.options) == filter_words(union_for(self.members, "trace").options):
            return found.every
        placed = [self.placed[m.name] for m in members]
        if all(p.kernels is not None for p in placed) and not any(m.options.nvtx_exclude for m in members):
            ids = selected_ids(placed)
            return [launch for launch in found.every if launch.id in ids]
        argv = import_csv_argv(self.ctx.ncu_path, found.report, filter_words(union.options))
        return list_launches(argv, importer_of(self.ctx))

    def _halve(self, members: list[Invocation], again: Callable[[list[Invocation]], None]) -> None:
        """ncu refused the union's command line (a section, set or option one member asks for): each
        half shares on its own, so that the member at fault ends up alone and fails alone."""
        half = len(members) // 2
        for part in (members[:half], members[half:]):
            if len(part) < 2 or self.ctx.stop.level:
                self._alone(part, "ncu refused the shared run's command line")
            else:
                again(part)

    def _missed(self, member: Invocation, found: TraceSelections) -> None:
        """Decided on the trace: its own run would profile nothing (no application start of its own)."""
        record = self.ctx.record(member.name)
        kernels = tuple(dict.fromkeys(launch.kernel for launch in found.every))
        hints = diagnose(member.options, ConsoleSummary(no_kernels=True, available_kernels=kernels), Status.NO_KERNELS)
        trace = found.info.report

        def missed() -> None:
            record.status = Status.NO_KERNELS
            record.message = "no kernels were profiled: the filters matched nothing in the discovery trace"
            record.diagnosis = hints
            record.obtained = Obtained(
                how="trace",
                reason=f"the discovery trace ({trace}) ran the application to its end and its filters select "
                "no launch it would profile (--no-share runs it on its own)",
            )

        self.ctx.book.commit(missed)
        self.outcome.done.append(record)

    # --- the union run and its splits --------------------------------------------------------------------

    def _profile(
        self,
        union: Invocation,
        members: list[Invocation],
        windows: dict[str, int] | dict[str, MemberWindow],
        trace_window: UnionWindow | None,
        trace: TraceInfo | None,
    ) -> bool:
        """Profile the union and split it; True when ncu refused its command line (nothing ran)."""
        ctx = self.ctx
        record = new_shared_record(ctx, union, members, self.group.window, self.gpus)
        if trace is not None:
            ctx.book.commit(lambda: setattr(record, "trace", trace))
        union = renamed(union, record.name)
        self._mark(members, Status.RUNNING, f"in shared run {record.name}")
        run_attempts(ctx, union, record.argv, record, self.lane, read_results=False)
        if record.status == Status.USAGE_ERROR and len(members) > 1 and not ctx.stop.level:
            return True  # refused as a whole: the caller halves the group
        if record.status != Status.OK or record.report is None:
            why = f"its shared run {record.name} ended {record.status.value}: {record.message}"
            self._give_up(members, why, record.name)
            return False
        report = ctx.run.root / record.report.path
        console = parse_console(ctx.store.read_log(union.name, 0))
        if trace is not None and console.profiled:  # this machine's costs, for later partitions
            self.cache.note_run(trace.key, record.seconds, console.profiled * per_launch_s(union.options))
        # The splits (CPU) go on while the next group's run uses the GPU; their verdicts are taken in
        # order once every run is done (_collect).
        job = SplitJob(record, union, tuple(members), windows, trace_window, report, console)
        self.pending.append((members, record.name, self.splitting.submit(split_union, ctx, job)))
        return False

    def _collect(self) -> None:
        for members, name, future in self.pending:
            splits = future.result()
            if isinstance(splits, str):
                self._alone(members, splits, name)
                continue
            self.outcome.done.extend(self.ctx.record(s.member.name) for s in splits if s.ok)
            for s in splits:
                if not s.ok:
                    self._alone([s.member], f"its split of {name} was not used: {s.problem}", name)

    # --- handing members back -----------------------------------------------------------------------------

    def _give_up(self, members: Sequence[Invocation], why: str, shared: str | None = None) -> None:
        """Nothing shared can serve `members`: interrupted when stopping, else each runs alone."""
        if not self.ctx.stop.level:
            return self._alone(members, why, shared)
        self._mark(members, Status.INTERRUPTED, why)
        self.outcome.done.extend(self.ctx.record(m.name) for m in members)

    def _alone(self, members: Sequence[Invocation], reason: str, shared: str | None = None) -> None:
        planned = {m.name: m for m in self.group.members}
        self.outcome.alone.extend(Alone(planned[m.name], reason, shared) for m in members)

    def _mark(self, members: Sequence[Invocation], status: Status, message: str) -> None:
        def change() -> None:
            for member in members:
                self.ctx.record(member.name).status = status
                self.ctx.record(member.name).message = message

        self.ctx.book.commit(change)
