"""A large union's members read out of its report instead of each exported into a report of its own: what a member's
filters select in the union's report is listed once per set of filters (an `ncu --import` a listing, not one an
export a member), the report's results are read once, and a member takes those at its launches' places, verified
against the trace as a split is. Its own report is written when asked for (`ncucampaign export`: the very command
recorded as its split_command). Unions of up to OWN_REPORTS members export each one's report as they always did."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import PurePosixPath

from ncucampaign.errors import EnvironmentProblem, ReportUnreadable
from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.rundir.book import now_iso
from ncucampaign.execute.rundir.manifest import AttemptRecord, ReportInfo, TargetRecord
from ncucampaign.execute.rundir.report_record import report_info
from ncucampaign.execute.rundir.result_records import ResultRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.shared.split import Recorded, Split, SplitJob, listed, record_split, set_aside
from ncucampaign.execute.trace.ncu_import import IMPORT_WORKERS, ImportFailed, export
from ncucampaign.own_time import CLOCK, REPORTS, SPLITS, VERIFICATION
from ncucampaign.plan.argv import escape_macros
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.launches import Launch
from ncucampaign.plan.share.union import split_words_problem
from ncucampaign.plan.share.windows import split_command, verified_text, verify_against_trace

# A union of at most this many members exports each its own report: at about 0.7 s of CPU an export on the H200
# (docs/ncu-behaviour.md, "Cost"), spread over the cores while the next union profiles, 16 cost a run's tail about
# a second; 1,000 members of one union were 1,000 processes, and on the fake ncu 45 s of a 2-core machine.
OWN_REPORTS = 16


def read_out(ctx: RunContext, job: SplitJob) -> list[Split] | str:
    """Every member's results out of the union's report (a string when the report cannot be listed or read)."""
    ctx.reporter.phase(f"{job.shared.name}: reading out its {len(job.members)} targets")
    words = {tuple(job.windows[m.name].filters(m)) for m in job.members} | {()}
    with ThreadPoolExecutor(min(IMPORT_WORKERS, len(words))) as pool, CLOCK.waiting():  # listings count their own
        asked = {w: pool.submit(listed, ctx, job.report, list(w)) for w in words}
        listings = {w: future.result() for w, future in asked.items()}
    for found in listings.values():
        if isinstance(found, str):
            return found
    reads: dict[tuple[str, ...], list[ResultRecord] | None] = {}
    try:
        with CLOCK.phase(REPORTS):
            for wanted in {tuple(m.options.metrics or ()) for m in job.members}:
                reads[wanted] = ctx.reader.read(job.report, wanted, job.console)
    except ReportUnreadable as exc:
        return f"the shared report cannot be read: {exc}"
    shown = ctx.run.relative(job.report)
    read_any = next(iter(reads.values()))
    info = report_info(
        job.report,
        shown,
        len(read_any) if read_any is not None else None,
        "report" if read_any is not None else "console",
    )
    splits = []
    for member in job.members:
        with CLOCK.phase(SPLITS):
            splits.append(_member(ctx, job, member, listings, reads[tuple(member.options.metrics or ())], info))
    return splits


def _member(
    ctx: RunContext,
    job: SplitJob,
    member: Invocation,
    listings: dict[tuple[str, ...], list[Launch] | str],
    read: list[ResultRecord] | None,
    info: ReportInfo,
) -> Split:
    if ctx.stop.level:
        return Split(member, False, "interrupted before it was read out")
    found = _places(job, member, listings, read)
    if isinstance(found, Split):
        return found
    results = [read[i].model_copy(update={"index": k}) for k, i in enumerate(found)] if read is not None else []
    _record(ctx, job, member, found, results, info)
    return Split(member, True)


def _places(
    job: SplitJob,
    member: Invocation,
    listings: dict[tuple[str, ...], list[Launch] | str],
    read: list[ResultRecord] | None,
) -> list[int] | Split:
    """The places of the member's results in the union's report, verified; or the Split that says why not."""
    window, count = job.windows[member.name], job.expected(member)
    selected, union = listings[tuple(window.filters(member))], listings[()]
    assert not isinstance(selected, str) and not isinstance(union, str)  # read_out returned their failures
    picked = selected[window.skip_in_union : window.skip_in_union + count]
    if len(picked) < count:
        return Split(member, False, f"its split holds {len(picked)} result(s), {count} asked")
    if job.trace_window is not None and window.from_trace:
        with CLOCK.phase(VERIFICATION):
            problem = verify_against_trace(union, job.trace_window, window, job.names)
        if problem is not None:
            return Split(member, False, problem.reason, problem.detail)
    ids = [launch.id for launch in picked]
    if read is not None and any(not 0 <= i < len(read) for i in ids):
        return Split(member, False, f"the shared report holds {len(read)} results; its listing names result {max(ids)}")
    return ids


def _record(
    ctx: RunContext, job: SplitJob, member: Invocation, ids: list[int], results: list[ResultRecord], info: ReportInfo
) -> None:
    record, window = ctx.record(member.name), job.windows[member.name]
    previous = set_aside(ctx, record)
    now = now_iso()
    attempt = AttemptRecord(
        number=previous + 1, started_at=now, ended_at=now, seconds=0.0, exit_code=0, status=Status.OK,
        message=f"read out of {job.shared.name}", report=info.path,
    )  # fmt: skip
    own = split_command(ctx.ncu_path, job.report, member, window, ctx.run.report(member.name))
    if window.from_trace:
        verification = verified_text(window, job.trace_window)
    else:
        verification = f"exact by construction: the same filters as {job.shared.name}, read out at its results {ids}"
    report = info.model_copy(update={"results": len(ids), "ids": ids})
    done = Recorded(attempt, results, report, own, verification)
    ctx.book.commit(lambda: record_split(record, job, member, done), record)


def export_own(store: RunStore, records: Sequence[TargetRecord], ncu: str) -> list[tuple[str, str | None]]:
    """Each read-out target's own report written with its recorded split command (held in the run directory's lock;
    its ncu this machine's `ncu`, never the one the file names, its report names where the run directory is now),
    several at once: (the report's path, None) or (the target, why not)."""
    run = store.run

    def one(record: TargetRecord) -> tuple[str, str | None]:
        argv = list(record.obtained.split_argv if record.obtained else [])
        if not argv or record.report is None:
            return record.name, "no split command recorded"
        problem = split_words_problem(argv)
        if problem:
            return record.name, f"its recorded split command is not one a run writes: {problem}"
        try:
            argv[0], argv[2] = ncu, str(run.inside(*PurePosixPath(record.report.path).parts))
            argv[-1] = escape_macros(str(run.report(record.name)))  # as split_argv writes it
            store.keep_report(record.name, len(record.attempts))  # an earlier export: set aside, never overwritten
            export(argv)
        except (ImportFailed, EnvironmentProblem) as exc:
            return record.name, str(exc)
        return run.relative(run.report(record.name)), None

    with store.lock(), ThreadPoolExecutor(IMPORT_WORKERS) as pool:
        return list(pool.map(one, records))
