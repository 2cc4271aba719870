"""Export one member of a shared run into its own report, check it, and record it as that target's
result (only when verified)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ncucampaign.errors import ReportUnreadable
from ncucampaign.execute.attempt.classify import ConsoleSummary
from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.rundir.book import now_iso
from ncucampaign.execute.rundir.manifest import AttemptRecord, Obtained, ReportInfo, SharedRunRecord, TargetRecord
from ncucampaign.execute.rundir.report_record import report_info
from ncucampaign.execute.rundir.result_records import ResultRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.trace.ncu_import import IMPORT_WORKERS, ImportFailed, export, importer_of, list_launches
from ncucampaign.own_time import CLOCK, REPORTS, SPLITS, VERIFICATION
from ncucampaign.plan.argv import shell_command
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.launches import Launch
from ncucampaign.plan.share.union import collection_words, import_csv_argv
from ncucampaign.plan.share.windows import (
    MemberWindow,
    Refusal,
    UnionWindow,
    split_command,
    verified_text,
    verify_against_trace,
)


@dataclass(frozen=True)
class Split:
    member: Invocation
    ok: bool
    problem: str = ""
    detail: str = ""  # the problem with every kernel's symbol, where it names kernels


@dataclass(frozen=True)
class SplitJob:
    """One union run done: its report, and what each member takes out of it."""

    shared: SharedRunRecord
    union: Invocation
    members: tuple[Invocation, ...]
    windows: Mapping[str, MemberWindow]
    trace_window: UnionWindow | None  # a window from the trace: each split is verified against it
    report: Path
    console: ConsoleSummary
    names: Mapping[str, str] = field(default_factory=dict)  # the trace's symbol -> function name
    earlier: Mapping[str, str] = field(default_factory=dict)  # why a regrouped member's first split was refused
    # Members whose split holds fewer results than they ask for, and how many (a union the application ended short
    # of: execute/shared/inferred.py); they end `incomplete`, as their own runs would.
    holds: Mapping[str, int] = field(default_factory=dict)

    def expected(self, member: Invocation) -> int:
        return self.holds.get(member.name, member.options.launch_count or 1)


def split_union(ctx: RunContext, job: SplitJob) -> list[Split] | str:
    """Every member's split (several at once); a string when the union's report cannot be listed. The union's
    listing, which verifies each split, runs beside the exports (one `ncu --import` less on the critical path,
    about 0.7 s a group): a split waits for it only before it is recorded, and is dropped unverified."""
    with ThreadPoolExecutor(1) as lister, ThreadPoolExecutor(IMPORT_WORKERS) as pool:
        listing = lister.submit(listed, ctx, job.report) if job.trace_window is not None else None

        def split(member: Invocation) -> Split:
            check = TraceCheck(listing, job.trace_window, job.windows[member.name], job.names)
            with CLOCK.phase(SPLITS):
                return split_member(ctx, member, job, check)

        with CLOCK.waiting():  # the workers count their own phases
            splits = list(pool.map(split, job.members))
    found = listing.result() if listing is not None else None
    return found if isinstance(found, str) else splits


def listed(ctx: RunContext, report: Path, filters: Sequence[str] = ()) -> list[Launch] | str:
    """What the union's report holds that `filters` select, in its order (IDs: the results' places in it)."""
    try:
        with CLOCK.phase(VERIFICATION):
            return list_launches(import_csv_argv(ctx.ncu_path, report, filters), importer_of(ctx))
    except ImportFailed as exc:
        return f"the shared report cannot be listed: {exc}"


@dataclass(frozen=True)
class TraceCheck:
    """How a member's split is verified against the trace: the union's listing (a future: it runs
    beside the exports), the trace's window and the member's. No listing: nothing to verify."""

    listing: Future[list[Launch] | str] | None
    trace_window: UnionWindow | None
    window: MemberWindow
    names: Mapping[str, str] = field(default_factory=dict)

    def problem(self) -> Refusal | None:
        if self.listing is None or self.trace_window is None or not self.window.from_trace:
            return None
        with CLOCK.waiting():  # the lister counts its own
            profiled = self.listing.result()
        if isinstance(profiled, str):
            return Refusal(profiled)
        return verify_against_trace(profiled, self.trace_window, self.window, self.names)


def split_member(ctx: RunContext, member: Invocation, job: SplitJob, check: TraceCheck) -> Split:
    """Export `member` out of the union's report, read it, and record it once `check` verifies it."""
    if ctx.stop.level:
        return Split(member, False, "interrupted before its split")
    return _MemberSplit(ctx, member, job, check).run()


class _MemberSplit:
    def __init__(self, ctx: RunContext, member: Invocation, job: SplitJob, check: TraceCheck) -> None:
        self.ctx, self.member, self.job = ctx, member, job
        self.shared, self.union = job.shared, job.union
        self.check, self.window = check, check.window
        self.count = job.expected(member)
        self.skip = self.window.skip_in_union
        self.record = ctx.record(member.name)
        self.report = ctx.run.report(member.name)

    def run(self) -> Split:
        union_report, console = self.job.report, self.job.console
        previous = set_aside(self.ctx, self.record)
        argv = split_command(self.ctx.ncu_path, union_report, self.member, self.window, self.report)
        command = shell_command(argv)
        started, clock = now_iso(), time.monotonic()
        self.ctx.store.append_log(
            self.member.name, f"# ncucampaign: split out of {self.shared.name}, {started}\n# {command}\n"
        )
        try:
            exported, output = export(argv, importer_of(self.ctx))
        except ImportFailed as exc:
            self.ctx.store.append_log(self.member.name, f"# {exc}\n")
            return Split(self.member, False, f"ncu --import: {exc}")
        self.ctx.store.append_log(self.member.name, output)
        try:
            with CLOCK.phase(REPORTS):
                read = self.ctx.reader.read(self.report, tuple(self.member.options.metrics or ()), console)
        except ReportUnreadable as exc:
            return Split(self.member, False, f"its split report cannot be read: {exc}")
        results = len(read) if read is not None else exported
        if results != self.count or not self.report.is_file():
            return Split(self.member, False, f"its split holds {results} result(s), {self.count} asked")
        with CLOCK.phase(VERIFICATION):
            problem = self.check.problem()
        if problem is not None:  # exported before the union was listed: not this target's report after all
            self.report.unlink(missing_ok=True)
            return Split(self.member, False, problem.reason, problem.detail)
        shown = self.ctx.run.relative(self.report)
        info = report_info(self.report, shown, results, "report" if read is not None else "console")  # before the lock
        attempt = AttemptRecord(
            number=previous + 1,
            started_at=started,
            ended_at=now_iso(),
            seconds=round(time.monotonic() - clock, 3),
            exit_code=0,
            status=Status.OK,
            message=f"split out of {self.shared.name}",
            report=shown,
        )
        recorded = Recorded(attempt, read or [], info, argv, self._verification())
        self.ctx.book.commit(lambda: record_split(self.record, self.job, self.member, recorded), self.record)
        return Split(self.member, True)

    def _verification(self) -> str:
        if self.window.from_trace:
            return verified_text(self.window, self.check.trace_window)
        first, last = self.skip + 1, self.skip + self.count
        where = f"launch {first}" if first == last else f"launches {first}-{last}"
        return f"exact by construction: the same filters as {self.shared.name}, of whose launches it holds {where}"


def set_aside(ctx: RunContext, record: TargetRecord) -> int:
    """The target's own report of an earlier attempt moved aside (its attempt says where); its last attempt's number."""
    previous = record.attempts[-1].number if record.attempts else 0
    kept = ctx.store.keep_report(record.name, previous)
    if kept is not None and record.attempts:
        ctx.book.commit(lambda: setattr(record.attempts[-1], "report", kept), record)
    return previous


@dataclass(frozen=True)
class Recorded:
    """What a member's verified split leaves in its record."""

    attempt: AttemptRecord
    results: list[ResultRecord]
    report: ReportInfo
    argv: list[str]  # the `ncu --import` that writes (or wrote) its own report
    verification: str


def record_split(record: TargetRecord, job: SplitJob, member: Invocation, done: Recorded) -> None:
    record.attempts.append(done.attempt)
    asked = member.options.launch_count or 1
    record.status, record.message, record.diagnosis = Status.OK, done.attempt.message, []
    if job.holds.get(member.name, asked) < asked:  # the application ended first
        record.status = Status.INCOMPLETE
        record.message = f"{done.attempt.message}: {job.holds[member.name]} of {asked} launches (the application ended)"
    record.seconds = done.attempt.seconds
    record.report = done.report
    record.results = done.results
    record.gpus = job.shared.gpus
    record.obtained = Obtained(
        how="shared",
        reason=job.earlier.get(member.name, ""),
        shared_run=job.shared.name,
        split_command=shell_command(done.argv),
        split_argv=done.argv,
        sections_asked=collection_words(member.options),
        sections_collected=collection_words(job.union.options),
        verification=done.verification,
    )
