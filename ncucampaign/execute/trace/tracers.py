"""The tracers in the order they are tried, and what every trace gets from them alike. The first that can stand
in takes the trace (a kept trace first); why another could not is logged. Kept once, here: a kept trace is
believed only as the file kept (stamp and digest); a trace listing no launch, or whose listings disagree, is not
taken; each take has its own work folder, removed after it or by the next run after a kill; callers use the
contract (Trace.more) and ask which tracer took it only to say so."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.rundir.manifest import SharedRunRecord, TraceInfo
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.trace.by_ncu import NcuTracer
from ncucampaign.execute.trace.by_nsys import NsysTracer
from ncucampaign.execute.trace.cache.store import Cached, TraceCache, TraceKey
from ncucampaign.execute.trace.contract import Kept, TraceAsk, Tracer, trace_name
from ncucampaign.execute.trace.listings import Listings, Wanted, disagreement

TRACERS: tuple[Tracer, ...] = (NsysTracer(), NcuTracer())
WORK_PREFIX = ".trace-"  # a take's work folder in the run's reports
_LEFT_BY_EARLIER = (WORK_PREFIX, ".nsys-")  # and the one versions before this one named so
Note = tuple[str | None, str]  # a tracer that did not take the trace (None: a kept one), and why


def label_of(name: str | None) -> str:
    """How people call the tracer a record names ("nsys": Nsight Systems; older records name none: ncu)."""
    return next((t.label for t in TRACERS if t.name == (name or "ncu")), name or "ncu")


def stops_at_count(name: str | None) -> bool:
    """Whether the tracer a record names stopped the application where its trace held its launch count."""
    return next((t.stops_at_count for t in TRACERS if t.name == (name or "ncu")), True)


@dataclass(frozen=True)
class Trace:
    """A discovery trace, taken or kept, and listed."""

    info: TraceInfo
    listed: Listings
    kept: Kept
    tracer: Tracer

    def more(self, ctx: RunContext, cache: TraceCache, wanted: Wanted) -> Listings | str:
        """More listings of the same trace (a union's filter)."""
        return self.tracer.listings(ctx, cache, self.kept, wanted)


def trace_for(ctx: RunContext, cache: TraceCache, ask: TraceAsk, wanted: Wanted) -> Trace | str:
    """The trace `ask` asks for, with the `wanted` listings; or why there is none. A trace it pins (one this run took
    in another task, its key as that task made it: this one's environment or working folder may differ) comes first."""
    pinned = _pinned(ctx, cache, ask, wanted) if ask.pinned is not None else None
    if pinned is not None:
        return pinned
    able: list[tuple[Tracer, TraceKey]] = []
    notes: list[Note] = []
    declined: list[str] = []
    for tracer in TRACERS:
        key = tracer.stand_in(ask, ctx.ncu_path)
        if isinstance(key, str):
            notes.append((tracer.label, key))
            if tracer.readiness(ctx.ncu_path, os.environ).ready:  # the campaign, not the machine, kept it out
                declined.append(f"not by {tracer.label}: {key}")
        else:
            able.append((tracer, key))
    ask = dataclasses.replace(ask, declined="; ".join(declined))
    for tracer, key in able:  # a trace an earlier run kept, by any tracer that can stand in
        with cache.key_lock(key):
            kept = _kept(ctx, cache, ask, tracer, key, wanted, notes)
        if kept is not None:
            return kept
    why = "no tracer can take the discovery trace"
    for tracer, key in able:
        if ctx.stop.level:
            return f"the run is stopping ({why})"
        with cache.key_lock(key):  # two lanes never take the same trace at once
            found = _kept(ctx, cache, ask, tracer, key, wanted, notes) or _taken(
                ctx, cache, ask, tracer, key, wanted, notes
            )
        if isinstance(found, Trace):
            return found
        why = found
        notes.append((tracer.label, found))
    return why


def _pinned(ctx: RunContext, cache: TraceCache, ask: TraceAsk, wanted: Wanted) -> Trace | None:
    """The pinned trace, as the tracer that took it lists it; None when it cannot be found or listed (then as if it
    were not pinned: a trace found or taken by key)."""
    assert ask.pinned is not None
    tracer = next((t for t in TRACERS if t.name == ask.pinned.tracer), None)
    if tracer is None:
        return None
    key = TraceKey(ask.pinned.key, reusable=False)  # this run's: found as cache.adopt() left it
    with cache.key_lock(key):
        return _kept(ctx, cache, ask, tracer, key, wanted, [])


def _kept(
    ctx: RunContext, cache: TraceCache, ask: TraceAsk, tracer: Tracer, key: TraceKey, wanted: Wanted, notes: list[Note]
) -> Trace | None:
    """The trace of `key` this run or an earlier one kept, listed; None when there is none that holds
    (a kept file that does not hold is dropped, with a note of why)."""
    found = cache.find(key)
    if isinstance(found, Cached):
        kept = Kept(found.path, key.digest)
        listed = _checked(tracer.listings(ctx, cache, kept, wanted))
        if not isinstance(listed, str):
            launches = cache.cut_at(key) or ask.launches
            info = _info(tracer, key, ask, str(found.path), found.reused, cache.seconds(key), launches)
            return Trace(info, listed, kept, tracer)
        found = f"the cached trace {found.path} cannot be used: {listed}"
    if found is not None:
        cache.forget(key.digest)
        notes.append((None, found))
    return None


def _taken(
    ctx: RunContext, cache: TraceCache, ask: TraceAsk, tracer: Tracer, key: TraceKey, wanted: Wanted, notes: list[Note]
) -> Trace | str:
    """The trace taken now by `tracer`, listed, kept in the cache; or why not."""
    ctx.store.make_folders("shared")
    if key.changed:  # its command was traced before: say why this trace is taken again
        notes = [*notes, (None, f"the workload changed since this command's last trace: {', '.join(key.changed)}")]
        ctx.reporter.phase(f"{trace_name(key)}: traced again: {notes[-1][1]}")
    for declined, why in notes:
        line = f"traced by {tracer.label}, not by {declined}: {why}" if declined else f"{why}: traced again"
        ctx.store.append_log(trace_name(key), f"# ncucampaign: {line}\n")
    try:
        work = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{key.short}-", dir=ctx.run.reports))
    except OSError as exc:  # a full or read-only disk
        return f"no work folder for it in {ctx.run.reports}: {exc.strerror or exc}"
    try:
        taken = tracer.take(ctx, ask, key, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if isinstance(taken, str):
        return taken
    cache.remember(key, taken.kept.path, taken.seconds)  # first: what is listed of it is kept with it
    listed = _checked(tracer.listings(ctx, cache, taken.kept, wanted))
    if isinstance(listed, str):
        cache.forget(key.digest)
        _not_used(ctx, taken.record, listed)
        return f"the discovery trace {taken.record.name} by {tracer.label} was not used: {listed}"
    launches = ask.launches
    if taken.cut:  # a trace of the launches it holds: whatever it does not hold may still come
        launches = len(listed[()])
        cache.note_cut(key, launches)
        _cut(ctx, taken.record, launches)
    info = _info(tracer, key, ask, ctx.run.relative(taken.kept.path), False, taken.seconds, launches)
    ctx.book.commit(lambda: setattr(taken.record, "trace", info), taken.record)
    return Trace(info, listed, taken.kept, tracer)


def _info(
    tracer: Tracer, key: TraceKey, ask: TraceAsk, report: str, reused: bool, seconds: float | None, launches: int
) -> TraceInfo:
    """`launches`: the most it holds, its launch count; or all it holds, where its timeout cut it."""
    return TraceInfo(report=report, key=key.digest, launches=launches, reused=reused, seconds=seconds,
                     tracer=tracer.name, launch_s=tracer.launch_s, declined=ask.declined or None)  # fmt: skip


def _checked(listed: Listings | str) -> Listings | str:
    """What every trace must be to be taken: listed, with at least one launch, its listings agreeing."""
    if isinstance(listed, str):
        return listed
    if not listed.get(()):
        return "it lists no launch at all"
    problem = disagreement(listed)
    return f"its listings disagree ({problem})" if problem is not None else listed


def _cut(ctx: RunContext, record: SharedRunRecord, launches: int) -> None:
    """Say of a trace its timeout or the application's failure cut that its launches are used (its status stays what
    happened to it)."""
    message = f"{record.message}; the {launches} launches it traced until then are used"
    ctx.store.append_log(record.name, f"# ncucampaign: {message}\n")
    ctx.book.commit(lambda: setattr(record, "message", message), record)


def _not_used(ctx: RunContext, record: SharedRunRecord, why: str) -> None:
    message = f"not used: {why}"
    ctx.store.append_log(record.name, f"# ncucampaign: {message}\n")

    def change() -> None:
        record.status, record.message = Status.PROFILER_ERROR, message
        if record.attempts:
            record.attempts[-1].status, record.attempts[-1].message = Status.PROFILER_ERROR, message

    ctx.book.commit(change, record)


def remove_work_folders(reports: Path) -> int:
    """Remove what takes left in `reports` when their runner was killed (call with the run's lock
    held); how many folders went."""
    removed = 0
    with contextlib.suppress(OSError):
        for folder in reports.iterdir():
            if folder.name.startswith(_LEFT_BY_EARLIER) and folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
    return removed
