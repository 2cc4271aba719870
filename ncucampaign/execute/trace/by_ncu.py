"""Getting a discovery trace for a shared run: from this run, from the cache, or by running it (with
the usual attempts, so timeouts, interruption and crash cleanup apply to it too)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ncucampaign.execute.attempt.attempts import run_attempts
from ncucampaign.execute.attempt.shared_record import new_shared_record
from ncucampaign.execute.context import RunContext
from ncucampaign.execute.rundir.manifest import Manifest, TraceInfo
from ncucampaign.execute.rundir.shared_kinds import TRACE_PREFIX
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.trace.by_nsys import find_nsys, nsys_trace
from ncucampaign.execute.trace.cache import TraceCache, TraceKey, trace_key
from ncucampaign.execute.trace.nsys_export import read_launches
from ncucampaign.execute.trace.workload import exported_environment, workload_digest
from ncucampaign.plan.argv import ncu_options
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.gpus import VISIBLE
from ncucampaign.plan.share.nsys_select import TracedLaunch, why_not_launcher, why_not_nsys
from ncucampaign.plan.share.union import trace_invocation


def key_of(
    trace: Invocation, manifest: Manifest, gpus: tuple[str, ...] | None, runs_root: Path | None = None
) -> TraceKey:
    """What the trace depends on: its command, environment (the campaign's over the exported one), the
    workload, ncu and the GPU model. `runs_root`: where run directories go (not the workload)."""
    env = {**exported_environment(os.environ), **dict(trace.env)}
    env.pop(VISIBLE, None)  # the GPU model counts, not which one
    known = {str(g.index): g.name for g in manifest.gpus or ()}
    gpu = known.get(gpus[0]) if gpus else (manifest.gpus[0].name if manifest.gpus else None)
    argv = [*ncu_options(trace), *trace.app_argv]
    workload = workload_digest(trace.cwd, trace.app_argv, manifest.workload_git, runs_root)
    return trace_key(argv, env, str(trace.cwd), workload, manifest.ncu.version, gpu)


@dataclass(frozen=True)
class Traced:
    """A discovery trace: ncu's report, or the launches Nsight Systems recorded (`nsys`) and the file
    that keeps them."""

    report: Path
    info: TraceInfo
    nsys: list[TracedLaunch] | None = None


def trace_for(
    ctx: RunContext,
    cache: TraceCache,
    members: Sequence[Invocation],
    gpus: tuple[str, ...] | None,
    lane: str | None,
    launches: int,
) -> Traced | str:
    """The trace (its first `launches` matching launches) and how it was obtained, or why there is
    none: ncu's trace when one is cached, else one by Nsight Systems where it can stand in, else ncu's."""
    trace = trace_invocation(members, launches)
    key = key_of(trace, ctx.book.manifest, gpus, cache.runs_root)
    with cache.key_lock(key):
        found = cache.find(key)
        if found is not None:
            path, reused = found
            seconds = cache.seconds(key)
            return Traced(
                path, TraceInfo(report=str(path), key=key.digest, launches=launches, reused=reused, seconds=seconds)
            )
        by_nsys = _by_nsys(ctx, cache, trace, key, members, gpus, launches)
        if isinstance(by_nsys, Traced):
            return by_nsys
        if ctx.stop.level:  # stopped during the trace by Nsight Systems: no other trace starts
            return f"the discovery trace by Nsight Systems was {by_nsys}"
        trace = dataclasses.replace(trace, name=f"{TRACE_PREFIX}{key.short}", target=f"trace-{key.short}")
        record = new_shared_record(ctx, trace, members, "trace", gpus, kind="trace")
        ctx.store.append_log(trace.name, f"# ncucampaign: traced by ncu, not by Nsight Systems: {by_nsys}\n")
        run_attempts(ctx, trace, record.argv, record, lane, read_results=False)
        if record.status != Status.OK or record.report is None:
            return f"the discovery trace {record.name} ended {record.status.value}: {record.message}"
        report = ctx.run.root / record.report.path
        cache.remember(key, report, record.seconds)
        info = TraceInfo(
            report=record.report.path, key=key.digest, launches=launches, reused=False, seconds=record.seconds
        )
        return Traced(report, info)


def _by_nsys(
    ctx: RunContext,
    cache: TraceCache,
    trace: Invocation,
    key: TraceKey,
    members: Sequence[Invocation],
    gpus: tuple[str, ...] | None,
    launches: int,
) -> Traced | str:
    """The trace by Nsight Systems (cached, or run now), or why not (execute/trace/by_nsys.py)."""
    if ctx.stop.level:
        return "the run is stopping"
    # The trace's filters select its launches; each member's own select its listings (selection.py).
    reasons = (why_not_nsys(o, dict(trace.env)) for o in (trace.options, *(m.options for m in members)))
    why = why_not_launcher(trace.app_argv) or next(filter(None, reasons), None)
    tools = find_nsys(ctx.ncu_path, os.environ) if why is None else why
    if isinstance(tools, str):
        return tools
    digest = hashlib.sha256(f"{key.digest} nsys {tools.identity}".encode()).hexdigest()
    nsys_key = TraceKey(digest, key.reusable)
    found, note = cache.find(nsys_key), None
    if found is not None:
        path, reused = found
        kept = read_launches(path)
        if kept is not None:
            info = TraceInfo(
                report=str(path), key=digest, launches=launches, reused=reused, seconds=cache.seconds(nsys_key),
                tracer="nsys",
            )  # fmt: skip
            return Traced(path, info, kept)
        cache.forget(digest)  # damaged: trace again, and say why the cached one was not taken
        note = f"the cached trace {path} cannot be read (damaged, or kept by another version of ncucampaign)"
    traced = nsys_trace(ctx, trace, members, gpus, tools, f"{TRACE_PREFIX}{nsys_key.short}", note)
    if isinstance(traced, str):
        return traced
    traced_launches, kept_file, record = traced
    cache.remember(nsys_key, kept_file, record.seconds)
    info = TraceInfo(
        report=ctx.run.relative(kept_file), key=digest, launches=launches, reused=False, seconds=record.seconds,
        tracer="nsys",
    )  # fmt: skip
    ctx.book.commit(lambda: setattr(record, "trace", info))
    return Traced(kept_file, info, traced_launches)
