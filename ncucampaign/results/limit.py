"""How far a run is from the limit of profiling its targets: one application start plus the replay of
exactly the launches its targets wanted (design: docs/ncu-behaviour.md, "Toward the limit"). Pure
(over the manifest).

The start is taken from the runs that profiled least, in this order (issue 41: the least of every
run's estimate was biased low, down to a start of 0.0 s): the targets' own runs (their median, never
below the least of them), else the discovery trace, else the shared runs (their median); each less
the replay of what it profiled at plan/share/cost.py's prices. An estimate of 0 or less is no
measurement: the line then prices the replay alone and says so. The line names where each figure
came from.
"""

from __future__ import annotations

import datetime
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ncucampaign.execute.rundir.manifest import Manifest, SharedRunRecord, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.argv import flag_values
from ncucampaign.plan.share.cost import collection_s, trace_start_s

_PROFILED = (Status.OK, Status.INCOMPLETE)
MEASURED_FLOOR_S = 0.05  # an estimate below this is noise, not a start


def launch_price(argv: Sequence[str]) -> float:
    """Estimated replay seconds of one launch for what an ncu command line collects."""
    sets = flag_values(argv, "--set")
    section_set = sets[-1] if sets else None
    return collection_s(section_set, flag_values(argv, "--section"), bool(flag_values(argv, "--metrics")))


@dataclass(frozen=True)
class Start:
    seconds: float
    source: str  # where it came from, for a person


def own_run_starts(manifest: Manifest) -> list[float]:
    """What each target's own run leaves of its seconds after its launches' priced replay."""
    return [
        attempt.seconds - (target.expected_results or 1) * launch_price(target.argv)
        for target in manifest.targets
        for attempt in target.attempts
        if attempt.status == Status.OK and not attempt.message.startswith("split out of")
    ]


def traced_by_nsys(run: SharedRunRecord) -> bool:
    """A discovery trace Nsight Systems took: its trace info says so, or (one that could not stand in
    for ncu's, which has none) its command is `nsys profile`."""
    return (run.trace is not None and run.trace.tracer == "nsys") or run.argv[1:2] == ["profile"]


def _shared_starts(manifest: Manifest, kind: str) -> Iterator[float]:
    for run in manifest.shared_runs:
        if run.status == Status.OK and run.report is not None and run.kind == kind:
            launches = run.report.results or 0
            if kind == "trace" and traced_by_nsys(run):
                yield run.seconds  # Nsight Systems replays nothing: its seconds are a start under a tracer
            elif kind == "trace":
                yield trace_start_s(run.seconds, launches)
            else:
                yield run.seconds - launches * launch_price(run.argv)


def measured_start(manifest: Manifest) -> Start | None:
    """The application's start, from the runs that profiled least; None when none measured one."""
    own = [s for s in own_run_starts(manifest) if s >= MEASURED_FLOOR_S]
    if own:
        what = "a target's own run" if len(own) == 1 else f"the median of {len(own)} targets' own runs"
        return Start(max(statistics.median(own), min(own)), f"{what}, less its priced replay")
    traces = [s for s in _shared_starts(manifest, "trace") if s >= MEASURED_FLOOR_S]
    if traces:
        what = "the discovery trace" if len(traces) == 1 else f"the median of {len(traces)} discovery traces"
        nsys = all(traced_by_nsys(r) for r in manifest.shared_runs if r.kind == "trace" and r.status == Status.OK)
        how = "by Nsight Systems, which replays nothing" if nsys else "less its traced launches"
        return Start(statistics.median(traces), f"{what}, {how}")
    unions = [s for s in _shared_starts(manifest, "union") if s >= MEASURED_FLOOR_S]
    if unions:
        what = "a shared run" if len(unions) == 1 else f"the median of {len(unions)} shared runs"
        return Start(statistics.median(unions), f"{what}, less its priced replay")
    return None


def wanted_launches(targets: Sequence[TargetRecord]) -> tuple[int, float]:
    """How many launches the targets that profiled something wanted, and their replay's price."""
    profiled = [t for t in targets if t.status in _PROFILED]
    count = sum(t.expected_results or 1 for t in profiled)
    return count, sum((t.expected_results or 1) * launch_price(t.argv) for t in profiled)


def limit_line(manifest: Manifest) -> str | None:
    """'limit: ...' for the end of `run`; None when the run profiled nothing or did not end."""
    count, replay = wanted_launches(manifest.targets)
    if not count or manifest.ended_at is None:
        return None
    took = (_when(manifest.ended_at) - _when(manifest.started_at)).total_seconds()
    shown = f"{took:.0f} s" if took >= 10 else f"{took:.1f} s"
    start = measured_start(manifest)
    replayed = f"{count} wanted launches' replay {replay:.1f} s at plan/share/cost.py's prices"
    if start is None:
        return (
            f"limit: this run took {shown}; no run here measured an application start, so its limit is "
            f"unknown ({replayed})"
        )
    limit = start.seconds + replay
    parts = f"(one application start {start.seconds:.1f} s: {start.source}; + {replayed}"
    if took < limit:  # the replay is priced, not measured: a machine faster than the prices beats "the limit"
        beaten = f"less than its estimated limit of {limit:.1f} s {parts}, above what this machine took)"
        return f"limit: this run took {shown}, {beaten}"
    return f"limit: this run took {shown}, {took / limit:.1f}x its limit of {limit:.1f} s {parts})"


def _when(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp)
