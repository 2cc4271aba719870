"""One shared run: find the window (from the targets, or from the discovery trace), profile the union
once with the usual attempts, split every member out of its report on import, verify each split,
and run alone every member whose split cannot be verified. Nothing is reported from a split that was
not verified."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

from ncucampaign.execute.attempts import AttemptHost, TargetAttempts
from ncucampaign.execute.classify import parse_console
from ncucampaign.execute.imports import ImportFailed, Launch, list_launches
from ncucampaign.execute.manifest import Obtained, SharedRunRecord, TargetRecord, TraceInfo
from ncucampaign.execute.split import Split, split_member
from ncucampaign.execute.status import Status
from ncucampaign.execute.trace_run import TraceRunner
from ncucampaign.execute.windows import (
    MemberWindow,
    UnionWindow,
    member_wanted,
    member_window,
    uncovered,
    union_window,
    verify_against_trace,
)
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.gpus import pin
from ncucampaign.plan.share import SharedGroup, pays
from ncucampaign.plan.union import TRACE_LAUNCHES, filter_words, import_csv_argv, renamed, trace_launches, with_options

# ncu --import is CPU-bound and short (docs/ncu-behaviour.md, "Shared runs"): one per core, within reason.
IMPORT_WORKERS = max(2, min(16, os.cpu_count() or 2))


class SharedHost(AttemptHost, Protocol):
    records: dict[str, TargetRecord]
    ncu_path: str
    traces: TraceRunner

    def run_target(self, inv: Invocation, gpus: tuple[str, ...] | None, lane: str | None) -> TargetRecord: ...
    def new_shared_record(
        self, union: Invocation, members: Sequence[Invocation], window: str, gpus: tuple[str, ...] | None
    ) -> SharedRunRecord: ...


class SharedRun:
    def __init__(self, host: SharedHost, group: SharedGroup, gpus: tuple[str, ...] | None, lane: str | None) -> None:
        self.host, self.group, self.gpus, self.lane = host, group, gpus, lane
        self.stop = host.stop
        self.members = [pin(m, gpus) if gpus else m for m in group.members]
        self.done: list[TargetRecord] = []

    def run(self) -> list[TargetRecord]:
        self._mark(self.members, Status.RUNNING, "")
        if self.group.window == "trace":
            self._run_from_trace()
        else:
            union = pin(self.group.union, self.gpus) if self.gpus else self.group.union
            windows = {m.name: (m.options.launch_skip or 0) - (union.options.launch_skip or 0) for m in self.members}
            self._profile(union, self.members, windows, None, None)
        return self.done

    # --- the window ------------------------------------------------------------------------------------

    def _run_from_trace(self) -> None:
        first = trace_launches(self.members)
        found = self._trace_and_windows(first)
        if isinstance(found, tuple) and found[0] and first < TRACE_LAUNCHES:
            found = self._trace_and_windows(TRACE_LAUNCHES)  # a target lies beyond the first trace
        if isinstance(found, str):
            return (
                self._finish_interrupted(self.members, found) if self.stop.level else self._alone(self.members, found)
            )
        beyond, info, selections = found
        self._alone(beyond, f"its launches lie beyond the discovery trace's first {info.launches} launches")
        # Members whose launches the application never made were already sent to run alone.
        members = [m for m in self.members if m.name in selections and m not in beyond]
        if len(members) < 2:
            return self._alone(members, "fewer than two targets left to share a run")
        wanted = {m.name: selections[m.name][1] for m in members}
        union = union_window(selections[""][0], list(wanted.values()))
        if any(uncovered(wanted[m.name], union) for m in members):
            return self._alone(members, "the shared filter does not cover every target's launches")
        if not pays(members, "trace", len(union.launches)):
            return self._alone(members, f"sharing would profile {len(union.launches)} launches: dearer than own runs")
        # The trace holds exactly the launches the group's filter matches: the union skips to the first wanted.
        union_inv = with_options(self.group.union, launch_skip=union.skip or None, launch_count=len(union.launches))
        union_inv = pin(union_inv, self.gpus) if self.gpus else union_inv
        windows = {
            m.name: member_window(selections[m.name][0], m.options.launch_skip or 0, wanted[m.name], union)
            for m in members
        }
        self._profile(union_inv, members, windows, union, info)

    def _trace_and_windows(
        self, launches: int
    ) -> str | tuple[list[Invocation], TraceInfo, dict[str, tuple[list[Launch], tuple[Launch, ...]]]]:
        """The trace, what each member's filters select in it ("": all of it), and the members it does
        not reach; or why there is no trace."""
        trace = self.host.traces.get(self.members, self.gpus, self.lane, launches)
        if isinstance(trace, str):
            return trace
        report, info = trace
        selections = self._select(report)
        if isinstance(selections, str) and info.reused:  # a damaged cache entry: trace again, once
            self.host.traces.cache.forget(info.key)
            return self._trace_and_windows(launches)
        if isinstance(selections, str):
            return selections
        beyond = [m for m in self.members if isinstance(selections[m.name], str)]
        if len(selections[""][0]) < launches:  # the application ended first: those launches do not exist
            for member in beyond:
                self._alone([member], str(selections.pop(member.name)))
            beyond = []
        kept = {name: s for name, s in selections.items() if not isinstance(s, str)}
        return beyond, info, kept  # type: ignore[return-value]

    def _select(self, report: Path) -> dict[str, tuple[list[Launch], tuple[Launch, ...]] | str] | str:
        """Per member, the launches its filters select in the trace and the ones it wants (or why the
        trace cannot say); under "" every launch of the trace."""
        ncu = self.host.ncu_path

        def selection(member: Invocation | None) -> tuple[list[Launch], tuple[Launch, ...]] | str:
            if member is None:
                every = list_launches(import_csv_argv(ncu, report))
                return every, tuple(every)
            o = member.options
            skip, count = o.launch_skip or 0, o.launch_count or 1
            picked = list_launches(import_csv_argv(ncu, report, filter_words(o), skip + count))
            wanted = member_wanted(picked, skip, count)
            return wanted if isinstance(wanted, str) else (picked, wanted)

        names = ["", *(m.name for m in self.members)]
        try:
            with ThreadPoolExecutor(IMPORT_WORKERS) as pool:
                return dict(zip(names, pool.map(selection, [None, *self.members]), strict=True))
        except ImportFailed as exc:
            return f"the discovery trace cannot be listed: {exc}"

    # --- the union run and its splits --------------------------------------------------------------------

    def _profile(
        self,
        union: Invocation,
        members: list[Invocation],
        windows: dict[str, int] | dict[str, MemberWindow],
        trace_window: UnionWindow | None,
        trace: TraceInfo | None,
    ) -> None:
        record = self.host.new_shared_record(union, members, self.group.window, self.gpus)
        if trace is not None:
            self.host.commit(lambda: setattr(record, "trace", trace))
        union = renamed(union, record.name)
        self._mark(members, Status.RUNNING, f"in shared run {record.name}")
        TargetAttempts(self.host, union, record.argv, record, self.stop, self.lane, read_results=False).run()
        if record.status != Status.OK or record.report is None:
            why = f"its shared run {record.name} ended {record.status.value}: {record.message}"
            return self._finish_interrupted(members, why) if self.stop.level else self._alone(members, why, record.name)
        report = self.host.store.run.root / record.report.path
        profiled: list[Launch] | None = None
        if trace_window is not None:
            try:
                profiled = list_launches(import_csv_argv(self.host.ncu_path, report))
            except ImportFailed as exc:
                return self._alone(members, f"the shared report cannot be listed: {exc}", record.name)
        console = parse_console(self.host.store.read_log(union.name, 0))

        def split(member: Invocation) -> Split:
            window = windows[member.name]
            problem = None
            if isinstance(window, MemberWindow) and profiled is not None and trace_window is not None:
                problem = verify_against_trace(profiled, trace_window, window)
            return split_member(self.host, member, record, union, report, window, console, problem)

        with ThreadPoolExecutor(IMPORT_WORKERS) as pool:
            splits = list(pool.map(split, members))
        failed = [s for s in splits if not s.ok]
        self.done.extend(self.host.records[s.member.name] for s in splits if s.ok)
        for s in failed:
            self._alone([s.member], f"its split of {record.name} was not used: {s.problem}", record.name)

    # --- falling back ---------------------------------------------------------------------------------

    def _alone(self, members: Sequence[Invocation], reason: str, shared: str | None = None) -> None:
        for member in members:
            if self.stop.level:
                self._finish_interrupted([member], f"interrupted before its own run ({reason})")
                continue
            original = next(m for m in self.group.members if m.name == member.name)
            record = self.host.records[member.name]
            self.host.commit(
                lambda r=record: setattr(r, "obtained", Obtained(how="alone", reason=reason, shared_run=shared))
            )
            self.done.append(self.host.run_target(original, self.gpus, self.lane))

    def _finish_interrupted(self, members: Sequence[Invocation], why: str) -> None:
        self._mark(members, Status.INTERRUPTED, why)
        self.done.extend(self.host.records[m.name] for m in members)

    def _mark(self, members: Sequence[Invocation], status: Status, message: str) -> None:
        def change() -> None:
            for member in members:
                self.host.records[member.name].status = status
                self.host.records[member.name].message = message

        self.host.commit(change)
