"""How far a run is from the limit of profiling its targets: one application start plus the replay of
exactly the launches its targets wanted (design: docs/ncu-behaviour.md, "Toward the limit"). Pure
(over the manifest).

The start is measured, not assumed: every application run the manifest records (a target's own run,
a shared run, a discovery trace) less the replay of the launches it profiled, at plan/share/cost.py's
prices; the least of these is the start. Replay is priced the same way for the wanted launches.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Sequence

from ncucampaign.execute.rundir.manifest import Manifest, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.argv import flag_values
from ncucampaign.plan.share.cost import collection_s

_PROFILED = (Status.OK, Status.INCOMPLETE)


def launch_price(argv: Sequence[str]) -> float:
    """Estimated replay seconds of one launch for what an ncu command line collects."""
    sets = flag_values(argv, "--set")
    section_set = sets[-1] if sets else None
    return collection_s(section_set, flag_values(argv, "--section"), bool(flag_values(argv, "--metrics")))


def application_runs(manifest: Manifest) -> Iterator[tuple[float, int, float]]:
    """(seconds, launches profiled, price of a launch) of every application run that profiled something."""
    for run in manifest.shared_runs:
        if run.status != Status.OK or run.report is None or run.kind == "timing":
            continue
        launches = run.report.results or 0
        price = collection_s(None, (), True) if run.kind == "trace" else launch_price(run.argv)
        yield run.seconds, launches, price
    for target in manifest.targets:
        for attempt in target.attempts:
            if attempt.status == Status.OK and not attempt.message.startswith("split out of"):
                yield attempt.seconds, target.expected_results or 1, launch_price(target.argv)


def wanted_launches(targets: Sequence[TargetRecord]) -> tuple[int, float]:
    """How many launches the targets that profiled something wanted, and their replay's price."""
    profiled = [t for t in targets if t.status in _PROFILED]
    count = sum(t.expected_results or 1 for t in profiled)
    return count, sum((t.expected_results or 1) * launch_price(t.argv) for t in profiled)


def limit_line(manifest: Manifest) -> str | None:
    """'limit: ...' for the end of `run`; None when the run profiled nothing or did not end."""
    starts = [seconds - launches * price for seconds, launches, price in application_runs(manifest)]
    count, replay = wanted_launches(manifest.targets)
    if not starts or not count or manifest.ended_at is None:
        return None
    took = (_when(manifest.ended_at) - _when(manifest.started_at)).total_seconds()
    start = max(min(starts), 0.0)
    limit = start + replay
    shown = f"{took:.0f} s" if took >= 10 else f"{took:.1f} s"
    parts = f"(one application start {start:.1f} s, the least any run here measured, + {count} wanted launches' "
    if took < limit:  # the replay is priced, not measured: a machine faster than the prices beats "the limit"
        return (
            f"limit: this run took {shown}, less than its estimated limit of {limit:.1f} s {parts}replay "
            f"{replay:.1f} s at plan/share/cost.py's prices, above what this machine took)"
        )
    return f"limit: this run took {shown}, {took / limit:.1f}x its limit of {limit:.1f} s {parts}replay {replay:.1f} s)"


def _when(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp)
