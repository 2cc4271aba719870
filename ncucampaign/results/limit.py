"""How far a run is from its limit: one application start plus the replay of exactly the wanted launches
(docs/ncu-behaviour.md, "Toward the limit"). Pure. The start comes from the runs that profiled least: the
targets' own (their median, never below the least; a run that profiled nothing ran the whole application and
replayed nothing), else the trace (unless it stopped at its launch bound: ncu killed the application there), else
the shared runs, each less the replay of what it profiled at its record's price. An estimate of 0 or less prices
the replay alone and says so."""

from __future__ import annotations

import datetime
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ncucampaign.execute.rundir.manifest import Manifest, SharedRunRecord, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.trace.tracers import label_of, stops_at_count

_PROFILED = (Status.OK, Status.INCOMPLETE)
MEASURED_FLOOR_S = 0.05  # an estimate below this is noise, not a start


def launch_price(record: TargetRecord) -> float:
    """The seconds one launch of what the record collected was priced at (0 for records of runs before they said)."""
    return record.launch_s or 0.0


@dataclass(frozen=True)
class Start:
    seconds: float
    source: str  # where it came from, for a person


def own_run_starts(manifest: Manifest) -> list[float]:
    """What each target's own run leaves of its seconds after its launches' priced replay. A run that profiled
    nothing is a whole start (moe_train on an H100: its misspelt target's 20.0 s, where the trace killed at its
    bound gave 11.9 s)."""
    return [
        attempt.seconds - ((target.expected_results or 1) * launch_price(target) if attempt.status == Status.OK else 0)
        for target in manifest.targets
        for attempt in target.attempts
        if attempt.status in (Status.OK, Status.NO_KERNELS) and not attempt.message.startswith("split out of")
    ]


def _shared_starts(manifest: Manifest, kind: str) -> Iterator[float]:
    """What each shared run of `kind` leaves of its seconds after what its launches were priced at
    (a trace's: what its traced launches add, none for a tracer that replays nothing)."""
    for run in manifest.shared_runs:
        if run.status == Status.OK and run.report is not None and run.kind == kind and not _at_bound(run):
            yield run.seconds - (run.report.results or 0) * launch_price(run)


def _at_bound(run: SharedRunRecord) -> bool:
    """A trace that holds its launch count, by a tracer that stops the application there (ncu: kill yes): it timed
    no whole start. Nsight Systems records the whole run and keeps its first launches: its seconds are a start."""
    if run.kind != "trace" or run.trace is None or run.report is None or not stops_at_count(run.tracer):
        return False
    return (run.report.results or 0) >= run.trace.launches > 0


def measured_start(manifest: Manifest) -> Start | None:
    """The application's start, from the runs that profiled least; None when none measured one."""
    own = [s for s in own_run_starts(manifest) if s >= MEASURED_FLOOR_S]
    if own:
        what = "a target's own run" if len(own) == 1 else f"the median of {len(own)} targets' own runs"
        return Start(max(statistics.median(own), min(own)), f"{what}, less its priced replay")
    traces = [s for s in _shared_starts(manifest, "trace") if s >= MEASURED_FLOOR_S]
    if traces:
        what = "the discovery trace" if len(traces) == 1 else f"the median of {len(traces)} discovery traces"
        traced = [r for r in manifest.shared_runs if r.kind == "trace" and r.status == Status.OK and not _at_bound(r)]
        return Start(statistics.median(traces), f"{what} {by_tracers(traced)}, {_trace_pricing(traced)}")
    unions = [s for s in _shared_starts(manifest, "union") if s >= MEASURED_FLOOR_S]
    if unions:
        what = "a shared run" if len(unions) == 1 else f"the median of {len(unions)} shared runs"
        return Start(statistics.median(unions), f"{what}, less its priced replay")
    return None


def _trace_pricing(traced: Sequence[SharedRunRecord]) -> str:
    """What the trace's own seconds were priced at, so that a price too low for a workload shows."""
    prices = {launch_price(r) for r in traced}
    if prices == {0.0}:
        return "which replays nothing"
    launches = sum(r.report.results or 0 for r in traced if r.report is not None)
    each = f" at {max(prices) * 1000:.1f} ms each" if len(prices) == 1 else ""
    return f"less its {launches} traced launches{each}"


def by_tracers(traces: Sequence[SharedRunRecord]) -> str:
    """'by Nsight Systems': who took the traces, as their records say."""
    return "by " + " and ".join(dict.fromkeys(label_of(t.tracer) for t in traces)) if traces else ""


def wanted_launches(targets: Sequence[TargetRecord]) -> tuple[int, float]:
    """How many launches the targets that profiled something wanted, and their replay's price."""
    profiled = [t for t in targets if t.status in _PROFILED]
    count = sum(t.expected_results or 1 for t in profiled)
    return count, sum((t.expected_results or 1) * launch_price(t) for t in profiled)


def limit_line(manifest: Manifest, took: float | None = None) -> str | None:
    """'floor: ...' for the end of `run` (once 'limit:', which read like a time limit: it is the least any run of
    these targets can take); None when the run profiled nothing or did not end. `took`: this process's
    seconds (the own-time line's); else the manifest's stamps of this session, whole seconds."""
    count, replay = wanted_launches(manifest.targets)
    if not count or manifest.ended_at is None:
        return None
    began = manifest.resumed[-1] if manifest.resumed else manifest.started_at  # this session's start
    ended, start_at = _when(manifest.ended_at), _when(began)
    whole = took is None and ended.microsecond == start_at.microsecond == 0  # stamps of whole seconds: no tenths
    took = (ended - start_at).total_seconds() if took is None else took
    shown = f"{took:.1f} s" if took < 10 and not whole else f"{took:.0f} s" if took >= 1 else "under a second"
    if manifest.resumed:  # the time between the interrupt and the resume is no one's; a limit prices whole runs
        return f"floor: this resume took {shown}; a floor prices a whole run, so none is said of a resume"
    start = measured_start(manifest)
    replayed = f"{count} wanted launches' replay {replay:.1f} s at plan/share/cost.py's prices"
    if start is None:
        return (
            f"floor: this run took {shown}; no run here measured an application start, so its floor is "
            f"unknown ({replayed})"
        )
    limit = start.seconds + replay
    parts = f"(one application start {start.seconds:.1f} s: {start.source}; + {replayed}"
    if took < limit:  # the replay is priced, not measured: a machine faster than the prices beats "the limit"
        beaten = f"less than its estimated floor of {limit:.1f} s {parts}, above what this machine took)"
        return f"floor: this run took {shown}, {beaten}"
    return (
        f"floor: this run took {shown}, {took / limit:.1f}x its floor of {limit:.1f} s, the least it can take {parts})"
    )


def _when(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp)
