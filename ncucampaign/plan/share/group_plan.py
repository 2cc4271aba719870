"""One shared group on the trace, composed whole: the union's invocation, its window, each member's window in it,
and whether it pays or why not; asked once per group by execute/shared/run.py. Pure."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.cost import Costs, pays, union_timeout
from ncucampaign.plan.share.launches import Launch
from ncucampaign.plan.share.union import picked, picks_possible, with_options
from ncucampaign.plan.share.windows import (
    MemberWindow,
    UnionWindow,
    WindowMemo,
    member_window,
    picked_window,
    uncovered,
    union_window,
)


@dataclass(frozen=True)
class MemberTrace:
    """What the trace says of one member: the launches its filters select, the ones it wants, and
    the trace IDs its kernel filter matches apart from its NVTX filter (None: not listed apart)."""

    member: Invocation
    selected: tuple[Launch, ...]
    wanted: tuple[Launch, ...]
    kernel_ids: frozenset[int] | None = None


@dataclass(frozen=True)
class GroupPlan:
    """A group's union run and each member's window in it; `why_not`: the members run alone instead."""

    union: Invocation | None = None
    window: UnionWindow | None = None
    windows: Mapping[str, MemberWindow] = field(default_factory=dict)
    why_not: str = ""


def compose_group(
    members: Sequence[MemberTrace],
    union_inv: Invocation,
    union_selected: Sequence[Launch],
    functions: Mapping[int, str],
    costs: Costs,
) -> GroupPlan:
    """The group's union run on the trace (`union_inv`, the one whose filter was listed): the launches its
    filter selects (`union_selected`), picked by `--kernel-id` where that profiles fewer, else a skip/count
    window; refused when the window misses a member's launch or costs more than the members' own runs."""
    invocations = [m.member for m in members]
    wanted = [m.wanted for m in members]
    window = union_window(union_selected, wanted)
    if any(uncovered(w, window) for w in wanted):
        return GroupPlan(why_not="the shared filter does not cover every target's launches")
    chosen = picked_window(union_selected, wanted, functions)
    if chosen is None or not picks_possible(union_inv.options) or len(chosen.launches) >= len(window.launches):
        chosen = None  # every match in the window: no fewer launches to pick
    window = chosen or window
    if not pays(invocations, "trace", len(window.launches), costs):
        return GroupPlan(why_not=f"sharing would profile {len(window.launches)} launches: dearer than own runs")
    if chosen is not None:
        union_inv = picked(union_inv, chosen.invocations, len(chosen.launches), chosen.functions)
    else:
        union_inv = with_options(union_inv, launch_skip=window.skip or None, launch_count=len(window.launches))
    union_inv = dataclasses.replace(union_inv, timeout=union_timeout(invocations, union_inv, len(window.launches)))
    memo = WindowMemo(window)
    windows = {
        m.member.name: member_window(
            m.selected, m.member.options.launch_skip or 0, m.wanted, window, functions, m.kernel_ids, memo
        )
        for m in members
    }
    return GroupPlan(union_inv, window, windows)
