"""One shared run: find the window (from the targets, or from the discovery trace), profile the union
once with the usual attempts, split every member out of its report on import and verify each split.
Nothing is reported from a split that was not verified: the members a shared run cannot serve are
handed back with the reason, and whoever runs units runs them alone (execute/units.py)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ncucampaign.execute.attempt.attempts import run_attempts
from ncucampaign.execute.attempt.classify import parse_console
from ncucampaign.execute.context import RunContext
from ncucampaign.execute.rundir.manifest import TargetRecord, TraceInfo
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.shared.imports import ImportFailed, Launch, list_launches
from ncucampaign.execute.shared.records import new_shared_record
from ncucampaign.execute.shared.selection import IMPORT_WORKERS, TraceSelections, trace_selections
from ncucampaign.execute.shared.split import Split, split_member
from ncucampaign.execute.shared.traces import TraceCache
from ncucampaign.execute.shared.windows import (
    MemberWindow,
    UnionWindow,
    member_window,
    uncovered,
    union_window,
    verify_against_trace,
)
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.gpus import pin
from ncucampaign.plan.share import SharedGroup, pays
from ncucampaign.plan.union import TRACE_LAUNCHES, import_csv_argv, renamed, trace_launches, with_options


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

    def run(self) -> SharedOutcome:
        self._mark(self.members, Status.RUNNING, "")
        if self.group.window == "trace":
            self._run_from_trace()
        else:
            union = pin(self.group.union, self.gpus) if self.gpus else self.group.union
            windows = {m.name: (m.options.launch_skip or 0) - (union.options.launch_skip or 0) for m in self.members}
            self._profile(union, self.members, windows, None, None)
        return self.outcome

    # --- the window ------------------------------------------------------------------------------------

    def _run_from_trace(self) -> None:
        first = trace_launches(self.members)
        found = self._trace(first)
        if isinstance(found, TraceSelections) and found.beyond and first < TRACE_LAUNCHES:
            found = self._trace(TRACE_LAUNCHES)  # a target lies beyond the first trace
        if isinstance(found, str):
            return self._give_up(self.members, found)
        self._alone(found.beyond, f"its launches lie beyond the discovery trace's first {found.info.launches} launches")
        members = [m for m in self.members if m.name in found.selected and m not in found.beyond]
        if len(members) < 2:
            return self._alone(members, "fewer than two targets left to share a run")
        wanted = {m.name: found.selected[m.name][1] for m in members}
        union = union_window(found.every, list(wanted.values()))
        if any(uncovered(wanted[m.name], union) for m in members):
            return self._alone(members, "the shared filter does not cover every target's launches")
        if not pays(members, "trace", len(union.launches)):
            return self._alone(members, f"sharing would profile {len(union.launches)} launches: dearer than own runs")
        # The trace holds exactly the launches the group's filter matches: the union skips to the first wanted.
        union_inv = with_options(self.group.union, launch_skip=union.skip or None, launch_count=len(union.launches))
        union_inv = pin(union_inv, self.gpus) if self.gpus else union_inv
        windows = {
            m.name: member_window(found.selected[m.name][0], m.options.launch_skip or 0, wanted[m.name], union)
            for m in members
        }
        self._profile(union_inv, members, windows, union, found.info)

    def _trace(self, launches: int) -> TraceSelections | str:
        found = trace_selections(self.ctx, self.cache, self.members, self.gpus, self.lane, launches)
        if not isinstance(found, str):
            for member, why in found.never:  # the application never made their launches
                self._alone([member], why)
        return found

    # --- the union run and its splits --------------------------------------------------------------------

    def _profile(
        self,
        union: Invocation,
        members: list[Invocation],
        windows: dict[str, int] | dict[str, MemberWindow],
        trace_window: UnionWindow | None,
        trace: TraceInfo | None,
    ) -> None:
        ctx = self.ctx
        record = new_shared_record(ctx, union, members, self.group.window, self.gpus)
        if trace is not None:
            ctx.book.commit(lambda: setattr(record, "trace", trace))
        union = renamed(union, record.name)
        self._mark(members, Status.RUNNING, f"in shared run {record.name}")
        run_attempts(ctx, union, record.argv, record, self.lane, read_results=False)
        if record.status != Status.OK or record.report is None:
            why = f"its shared run {record.name} ended {record.status.value}: {record.message}"
            return self._give_up(members, why, record.name)
        report = ctx.run.root / record.report.path
        profiled: list[Launch] | None = None
        if trace_window is not None:
            try:
                profiled = list_launches(import_csv_argv(ctx.ncu_path, report))
            except ImportFailed as exc:
                return self._alone(members, f"the shared report cannot be listed: {exc}", record.name)
        console = parse_console(ctx.store.read_log(union.name, 0))

        def split(member: Invocation) -> Split:
            window = windows[member.name]
            problem = None
            if isinstance(window, MemberWindow) and profiled is not None and trace_window is not None:
                problem = verify_against_trace(profiled, trace_window, window)
            return split_member(ctx, member, record, union, report, window, console, problem)

        with ThreadPoolExecutor(IMPORT_WORKERS) as pool:
            splits = list(pool.map(split, members))
        self.outcome.done.extend(ctx.record(s.member.name) for s in splits if s.ok)
        for s in splits:
            if not s.ok:
                self._alone([s.member], f"its split of {record.name} was not used: {s.problem}", record.name)

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
