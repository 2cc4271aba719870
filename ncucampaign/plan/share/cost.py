"""The one price list of sharing: seconds of an application start, a replayed launch per collection, a split, a
trace; a target alone and a group together, calibrated on this machine's runs or not. Pure."""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.union import Window, union_launches, union_options
from ncucampaign.spec.model import TargetOptions

# Cost estimates in seconds, from docs/ncu-behaviour.md "Cost": an application start under ncu, one
# replayed launch per collection, one split on import (CPU, several at once), the trace's start.
APP_START_S = 10.0
SPLIT_S = 0.2
PER_LAUNCH_S = {"full": 3.5, "detailed": 1.5, "basic": 0.4}
SECTION_S = 0.4
EXTRA_SECTION_S = 0.1
# Sections measured to add almost nothing per launch next to another one: what they collect comes with
# the launch or with SpeedOfLight's passes (docs/ncu-behaviour.md, "Picked windows": 27 launches with
# SpeedOfLight and these three took 16.6 s, 12 with SpeedOfLight alone 11.3 s).
NEAR_FREE_SECTIONS = frozenset({"LaunchStats", "Occupancy", "SchedulerStats"})
NEAR_FREE_SECTION_S = 0.01
METRICS_ONLY_S = 0.02
# One launch of a discovery trace beyond the application's start under ncu: 10.8 ms on the zoo's decode
# (223 launches, +2.4 s) and 10.9 ms on cuda_cpp (110, +1.2 s) (docs/ncu-behaviour.md, "What the
# discovery trace costs", 2026-12-02).
TRACED_LAUNCH_S = 0.011
TRACE_S = APP_START_S + 5.0
# A union profiles at most this many launches: its report is read whole, and the reader's memory grows with it (on the
# fake ncu, 1,000 SpeedOfLight results, 36 MB, took 650 MB to read; a real PyTorch kernel's result holds 0.7-1 MB),
# and a union that fails loses every launch it profiled. A start more per 256 launches adds under a tenth to their
# replay at SpeedOfLight (0.4 s a launch), a few hundredths at `set: full`.
UNION_LAUNCHES = 256
# A union may run as long as a member's own run (its timeout) and its other launches' replay, at twice their price:
# a target's timeout is meant for its own run, and a union of 256 SpeedOfLight launches replays for 100 s more.
UNION_TIMEOUT_MARGIN = 2.0
# A measured start is believed within these bounds (docs/ncu-behaviour.md, "Cost": 7-12 s measured).
MIN_START_S, MAX_START_S = 2.0, 3 * APP_START_S
MIN_SCALE, MAX_SCALE = 0.25, 4.0  # a fitted replay price within these factors of the table's


def per_launch_s(options: TargetOptions) -> float:
    """Estimated replay seconds of one launch for what `options` collect."""
    return collection_s(options.section_set, options.sections or (), bool(options.metrics))


def collection_s(section_set: str | None, sections: Collection[str], metrics: bool) -> float:
    """Estimated replay seconds of one launch collecting a set, sections and (any) metrics."""
    seconds = PER_LAUNCH_S.get(section_set or "", PER_LAUNCH_S["basic"] if section_set else 0.0)
    if sections:
        # The dearest section pays the first one's price; the others add theirs.
        extras = sorted(NEAR_FREE_SECTION_S if s in NEAR_FREE_SECTIONS else EXTRA_SECTION_S for s in sections)
        seconds = max(seconds, SECTION_S) + sum(extras[:-1])
    if section_set is None and not sections:
        seconds = METRICS_ONLY_S if metrics else PER_LAUNCH_S["basic"]
    return seconds


@dataclass(frozen=True)
class Costs:
    """Seconds: an application start, and one split on import; with the trace's function names, a
    group is priced at the fewer of its window's matches and its picked launches (`--kernel-id`)."""

    start_s: float = APP_START_S
    split_s: float = SPLIT_S
    replay_scale: float = 1.0  # the replay prices (plan/share/cost.py) times this, as measured here
    functions: Mapping[int, str] | None = None  # trace ID -> function name (None: no picked windows)
    union_launches: int | None = None  # a union may profile at most this many (None: UNION_LAUNCHES)

    @property
    def launches_at_most(self) -> int:
        return self.union_launches or UNION_LAUNCHES


def calibrated(
    trace_seconds: float | None,
    traced_s: float,
    functions: Mapping[int, str] | None,
    runs: Sequence[tuple[float, float]] = (),
) -> Costs:
    """Costs from this machine's own measurements. `runs`: earlier union runs of this trace (seconds, replay as
    priced). Over sizes spread apart start and replay scale are fitted by least squares (on an H200 x2, 27 launches
    in 14.8 s and 5 in 8.2 s: a 6 s start, replay a quarter too dear); else the start is the runs' median less
    their priced replay, or the trace's seconds less its traced launches (`traced_s`), whichever is more."""
    trace_start = trace_seconds - traced_s if trace_seconds is not None else None
    scale, start = 1.0, trace_start
    if spread_enough(runs):
        scale, start = _fit(runs)
    elif runs:  # the measured prices: the median start the runs leave, never below the trace's
        start = max(statistics.median(seconds - priced for seconds, priced in runs), trace_start or 0.0)
    if start is None:
        return Costs(functions=functions)
    return Costs(start_s=min(max(start, MIN_START_S), MAX_START_S), functions=functions, replay_scale=scale)


FIT_RUNS, FIT_SPREAD = 2, 2.0  # runs, and how many times the largest union's priced replay the smallest's


def spread_enough(runs: Sequence[tuple[float, float]]) -> bool:
    """Whether the union runs span sizes enough to fit a slope (two runs of nearby sizes fitted
    a new scale with every run, and the next partition followed it: 2 unions, then 1, then 3)."""
    priced = [p for _, p in runs]
    return len(runs) >= FIT_RUNS and min(priced) > 0 and max(priced) >= FIT_SPREAD * min(priced)


def _fit(runs: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """seconds = start + scale * priced, least squares; the scale kept within MIN/MAX_SCALE."""
    xs, ys = [priced for _, priced in runs], [seconds for seconds, _ in runs]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    scale = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
    scale = min(max(scale, MIN_SCALE), MAX_SCALE)
    return scale, mean_y - scale * mean_x


UNCALIBRATED = Costs()


def group_seconds(replay_s: float, members: int, costs: Costs = UNCALIBRATED) -> float:
    """The one price of a group: its union's run (`union_run_s`) and a split per member."""
    return union_run_s(replay_s, costs) + costs.split_s * members


def union_run_s(replay_s: float, costs: Costs = UNCALIBRATED) -> float:
    """A union's own run: an application start and the replay of what it profiles (`replay_s` at the table's prices)."""
    return costs.start_s + replay_s * costs.replay_scale


def union_timeout(members: Sequence[Invocation], union: Invocation, launches: int) -> float:
    """The union's timeout: its members' (the longest), and its launches beyond a member's own at twice their price."""
    own = max(m.options.launch_count or 1 for m in members)
    return max(m.timeout for m in members) + UNION_TIMEOUT_MARGIN * max(0, launches - own) * per_launch_s(union.options)


def alone_seconds(inv: Invocation, costs: Costs = UNCALIBRATED) -> float:
    """A target's own run: a start and its own launches' replay."""
    return costs.start_s + (inv.options.launch_count or 1) * per_launch_s(inv.options) * costs.replay_scale


def group_s(
    members: Sequence[Invocation], window: Window, launches: int | None = None, costs: Costs = UNCALIBRATED
) -> float:
    union = union_options(members, with_nvtx=window == "trace")
    count = launches if launches is not None else union_launches(members, window)
    return group_seconds(count * per_launch_s(union), len(members), costs)


def pays(
    members: Sequence[Invocation], window: Window, launches: int | None = None, costs: Costs = UNCALIBRATED
) -> bool:
    """Sharing pays when the group costs less than its members' own runs (at the same prices)."""
    return group_s(members, window, launches, costs) < sum(alone_seconds(m, costs) for m in members)


def trace_pays(members: Sequence[Invocation]) -> bool:
    """Whether a trace can pay at best: its cost and one start for all the wanted launches, against
    every member's own run (the run's partition decides what actually shares)."""
    wanted = sum((m.options.launch_count or 1) * per_launch_s(m.options) for m in members)
    return TRACE_S + group_seconds(wanted, len(members)) < sum(alone_seconds(m) for m in members)
