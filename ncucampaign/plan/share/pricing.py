"""What a group of a trace pool costs, from its members. Pure. A group costs one application start, every launch
its union profiles at its collection's price and a split per member; a member alone costs its own run. The
window is estimated from what each member's filters select in the trace. The partition's search prices groups
from running tallies instead (plan/share/tallies.py), to the same float."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.cost import UNCALIBRATED, Costs, alone_seconds, group_seconds, per_launch_s
from ncucampaign.plan.share.union import picks_possible, union_options
from ncucampaign.plan.share.windows import picked_ids

# What a union's options decide of its price: whether `--kernel-id` may pick, and a launch's replay.
UnionPrice = tuple[bool, float]


@dataclass(frozen=True)
class Placed:
    """A member and what the trace says of it (launch IDs in the trace)."""

    member: Invocation
    selected: tuple[int, ...]  # every launch its own filters select, ascending
    wanted: tuple[int, ...]  # the ones it profiles, ascending
    # What its kernel filter alone and its NVTX filters alone select (None: it has no NVTX filter).
    # A union ORs the kernel names and, when every member has one, the NVTX includes: it selects
    # every launch matching any member's kernel within any member's NVTX scope, more than the union
    # of the members' own selections. Without these, the window is estimated from `selected`.
    kernels: frozenset[int] | None = None
    scope: frozenset[int] | None = None
    family: tuple[object, ...] = ()  # members with the same filters (a launch_skip matrix, say)


def group_cost(members: Sequence[Placed], costs: Costs = UNCALIBRATED, price: UnionPrice | None = None) -> float:
    """Estimated seconds of `members` profiled together (one member: its own run); `price`: their union's,
    when the caller knows it already."""
    if len(members) == 1:
        return alone_seconds(members[0].member, costs)
    picks, launch_s = price or union_price(members)
    return group_seconds(profiled_launches(members, costs.functions if picks else None) * launch_s, len(members), costs)


def union_price(members: Sequence[Placed]) -> UnionPrice:
    union = union_options([p.member for p in members], with_nvtx=True)
    return picks_possible(union), per_launch_s(union)


def profiled_launches(members: Sequence[Placed], functions: Mapping[int, str] | None = None) -> int:
    """How many launches the group's union profiles: its filter's matches from its first wanted launch
    to its last, or (with function names) the launches `--kernel-id` picks, whichever is fewer."""
    first = min(p.wanted[0] for p in members)
    last = max(p.wanted[-1] for p in members)
    ids = selected_ids(members)
    selected = sorted(ids)
    window = bisect_right(selected, last) - bisect_left(selected, first)
    if functions is None or not ids <= functions.keys():
        return window
    wanted = {i for p in members for i in p.wanted if i in functions}
    return min(window, len(picked_ids(selected, wanted, functions).ids)) if wanted else window


def selected_ids(members: Sequence[Placed]) -> set[int]:
    """Every trace ID the group's union selects (its kernels within its NVTX scopes, OR-ed)."""
    if all(p.kernels is not None for p in members):
        kernels = set().union(*(p.kernels or () for p in members))
        scopes = [p.scope for p in members]
        if all(scope is not None for scope in scopes):
            kernels &= set().union(*(scope or () for scope in scopes))
        return kernels
    return set().union(*(p.selected for p in members))
