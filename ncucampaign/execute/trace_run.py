"""Getting a discovery trace for a shared run: from this run, from the cache, or by running it (with
the usual attempts, so timeouts, interruption and crash cleanup apply to it too)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from ncucampaign.execute.attempts import AttemptHost, TargetAttempts
from ncucampaign.execute.manifest import Manifest, SharedRunRecord, TraceInfo
from ncucampaign.execute.status import Status
from ncucampaign.execute.traces import TraceCache, TraceKey, trace_key
from ncucampaign.plan.argv import ncu_options
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.gpus import VISIBLE
from ncucampaign.plan.union import trace_invocation


class TraceHost(AttemptHost, Protocol):
    manifest: Manifest

    def new_shared_record(
        self, union: Invocation, members: Sequence[Invocation], window: str, gpus: tuple[str, ...] | None
    ) -> SharedRunRecord: ...


class TraceRunner:
    def __init__(self, host: TraceHost, cache: TraceCache) -> None:
        self.host, self.cache = host, cache

    def key(self, trace: Invocation, gpus: tuple[str, ...] | None) -> TraceKey:
        manifest = self.host.manifest
        env = {k: v for k, v in trace.env if k != VISIBLE}  # the GPU model counts, not which one
        known = {str(g.index): g.name for g in manifest.gpus or ()}
        gpu = known.get(gpus[0]) if gpus else (manifest.gpus[0].name if manifest.gpus else None)
        argv = [*ncu_options(trace), *trace.app_argv]
        return trace_key(argv, env, str(trace.cwd), manifest.workload_git, manifest.ncu.version, gpu)

    def get(
        self, members: Sequence[Invocation], gpus: tuple[str, ...] | None, lane: str | None, launches: int
    ) -> tuple[Path, TraceInfo] | str:
        """The trace report (its first `launches` matching launches) and how it was obtained, or why
        there is none."""
        trace = trace_invocation(members, launches)
        key = self.key(trace, gpus)
        with self.cache.key_lock(key):
            found = self.cache.find(key)
            if found is not None:
                path, reused = found
                return path, TraceInfo(report=str(path), key=key.digest, launches=launches, reused=reused)
            trace = dataclasses.replace(trace, name=f"shared/trace-{key.short}", target=f"trace-{key.short}")
            record = self.host.new_shared_record(trace, members, "trace", gpus)
            TargetAttempts(self.host, trace, record.argv, record, self.host.stop, lane, read_results=False).run()
            if record.status != Status.OK or record.report is None:
                return f"the discovery trace {record.name} ended {record.status.value}: {record.message}"
            report = self.host.store.run.root / record.report.path
            self.cache.remember(key, report)
            return report, TraceInfo(report=record.report.path, key=key.digest, launches=launches, reused=False)
