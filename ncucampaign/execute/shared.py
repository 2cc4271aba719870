"""One shared run: find the window (from the targets, or from the discovery trace), profile the union
once with the usual attempts, split every member out of its report on import, verify each split,
and run alone every member whose split cannot be verified. Nothing is reported from a split that was
not verified."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
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
from ncucampaign.plan.union import filter_words, import_csv_argv, union_options, with_options

IMPORT_WORKERS = 8  # ncu --import is CPU-bound and short (docs/ncu-behaviour.md, "Shared runs")


class SharedHost(AttemptHost, Protocol):
    records: dict[str, TargetRecord]
    ncu_path: str
    traces: TraceRunner

    def run_target(self, inv: Invocation, gpus: tuple[str, ...] | None, lane: str | None) -> TargetRecord: ...
    def new_shared_record(self, union: Invocation, members: Sequence[Invocation], window: str) -> SharedRunRecord: ...


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
        trace = self.host.traces.get(self.members, self.gpus, self.lane)
        if isinstance(trace, str):
            return (
                self._finish_interrupted(self.members, trace) if self.stop.level else self._alone(self.members, trace)
            )
        report, info = trace
        members, wanted, selections = self._select(report)
        if len(members) < 2:
            return self._alone(members, "fewer than two targets left to share a run")
        options = union_options(members, with_nvtx=True)
        union_inv = with_options(members[0], **{n: getattr(options, n) for n in type(options).model_fields})
        try:
            union_rows = list_launches(import_csv_argv(self.host.ncu_path, report, filter_words(options)))
        except ImportFailed as exc:
            return self._alone(members, f"the trace cannot be listed with the shared filters: {exc}")
        union = union_window(union_rows, list(wanted.values()))
        missing = {m.name: uncovered(wanted[m.name], union) for m in members}
        if any(missing.values()):
            return self._alone(members, "the shared filter does not cover every target's launches")
        if not pays(members, "trace", len(union.launches)):
            return self._alone(members, f"sharing would profile {len(union.launches)} launches: dearer than own runs")
        union_inv = with_options(
            union_inv, launch_skip_before_match=union.skip_before or None, launch_count=len(union.launches)
        )
        windows = {
            m.name: member_window(selections[m.name], m.options.launch_skip or 0, wanted[m.name], union)
            for m in members
        }
        self._profile(union_inv, members, windows, union, info)

    def _select(
        self, report: object
    ) -> tuple[list[Invocation], dict[str, tuple[Launch, ...]], dict[str, list[Launch]]]:
        """What each member's filters select in the trace; members the trace cannot place run alone."""

        def selection(member: Invocation) -> list[Launch] | str:
            o = member.options
            argv = import_csv_argv(
                self.host.ncu_path, report, filter_words(o), (o.launch_skip or 0) + (o.launch_count or 1)
            )  # type: ignore[arg-type]
            try:
                return list_launches(argv)
            except ImportFailed as exc:
                return f"its filters cannot be applied to the discovery trace: {exc}"

        with ThreadPoolExecutor(IMPORT_WORKERS) as pool:
            found = dict(zip([m.name for m in self.members], pool.map(selection, self.members), strict=True))
        kept, wanted, selections = [], {}, {}
        for member in self.members:
            picked = found[member.name]
            o = member.options
            chosen = (
                picked if isinstance(picked, str) else member_wanted(picked, o.launch_skip or 0, o.launch_count or 1, 0)
            )
            if isinstance(chosen, str):
                self._alone([member], chosen.replace("trace of 0 launches", "trace"))
                continue
            kept.append(member)
            wanted[member.name], selections[member.name] = chosen, picked  # type: ignore[assignment]
        return kept, wanted, selections  # type: ignore[return-value]

    # --- the union run and its splits --------------------------------------------------------------------

    def _profile(
        self,
        union: Invocation,
        members: list[Invocation],
        windows: dict[str, int] | dict[str, MemberWindow],
        trace_window: UnionWindow | None,
        trace: TraceInfo | None,
    ) -> None:
        record = self.host.new_shared_record(union, members, self.group.window)
        if trace is not None:
            self.host.commit(lambda: setattr(record, "trace", trace))
        union = self._renamed(union, record.name)
        self._mark(members, Status.RUNNING, f"in shared run {record.name}")
        TargetAttempts(self.host, union, record.argv, record, self.stop, self.lane).run()
        self.host.commit(lambda: setattr(record, "results", []))  # the members hold the results
        if record.status != Status.OK:
            why = f"its shared run {record.name} ended {record.status.value}: {record.message}"
            return self._finish_interrupted(members, why) if self.stop.level else self._alone(members, why, record.name)
        report = self.host.store.run.root / record.report.path  # type: ignore[union-attr]
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

    @staticmethod
    def _renamed(inv: Invocation, name: str) -> Invocation:
        return dataclasses.replace(inv, name=name, target=name, matrix=())
