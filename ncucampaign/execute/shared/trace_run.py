"""Getting a discovery trace for a shared run: from this run, from the cache, or by running it (with
the usual attempts, so timeouts, interruption and crash cleanup apply to it too)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

from ncucampaign.execute.attempt.attempts import run_attempts
from ncucampaign.execute.context import RunContext
from ncucampaign.execute.rundir.manifest import Manifest, TraceInfo
from ncucampaign.execute.rundir.shared_kinds import TRACE_PREFIX
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.shared.records import new_shared_record
from ncucampaign.execute.shared.traces import TraceCache, TraceKey, trace_key
from ncucampaign.execute.shared.workload import exported_environment, workload_digest
from ncucampaign.plan.argv import ncu_options
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.gpus import VISIBLE
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


def trace_for(
    ctx: RunContext,
    cache: TraceCache,
    members: Sequence[Invocation],
    gpus: tuple[str, ...] | None,
    lane: str | None,
    launches: int,
) -> tuple[Path, TraceInfo] | str:
    """The trace report (its first `launches` matching launches) and how it was obtained, or why
    there is none."""
    trace = trace_invocation(members, launches)
    key = key_of(trace, ctx.book.manifest, gpus, cache.runs_root)
    with cache.key_lock(key):
        found = cache.find(key)
        if found is not None:
            path, reused = found
            seconds = cache.seconds(key)
            return path, TraceInfo(report=str(path), key=key.digest, launches=launches, reused=reused, seconds=seconds)
        trace = dataclasses.replace(trace, name=f"{TRACE_PREFIX}{key.short}", target=f"trace-{key.short}")
        record = new_shared_record(ctx, trace, members, "trace", gpus, kind="trace")
        run_attempts(ctx, trace, record.argv, record, lane, read_results=False)
        if record.status != Status.OK or record.report is None:
            return f"the discovery trace {record.name} ended {record.status.value}: {record.message}"
        report = ctx.run.root / record.report.path
        cache.remember(key, report, record.seconds)
        info = TraceInfo(
            report=record.report.path, key=key.digest, launches=launches, reused=False, seconds=record.seconds
        )
        return report, info
