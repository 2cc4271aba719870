"""The one price list of sharing: estimated seconds of an application start, a replayed launch per
collection, a split, a trace; what a target costs on its own and what a group costs, calibrated on
this machine's own runs or not. Every place that prices a group asks this module (issue 32: the price
was written four times, and the run's veto priced a calibrated partition with the fixed constants).
Pure."""

from __future__ import annotations

from collections.abc import Collection, Sequence

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
TRACE_S = APP_START_S + 5.0


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


def alone_s(inv: Invocation) -> float:
    return APP_START_S + (inv.options.launch_count or 1) * per_launch_s(inv.options)


def group_s(members: Sequence[Invocation], window: Window, launches: int | None = None) -> float:
    union = union_options(members, with_nvtx=window == "trace")
    count = launches if launches is not None else union_launches(members, window)
    return APP_START_S + count * per_launch_s(union) + SPLIT_S * len(members)


def pays(members: Sequence[Invocation], window: Window, launches: int | None = None) -> bool:
    """Sharing pays when the group costs less than its members' own runs."""
    return group_s(members, window, launches) < sum(alone_s(m) for m in members)
