"""Which members of a trace pool profile together: the partition of least estimated cost. Pure. A group costs
one application start, every launch its union profiles at its collection's price and a split per member; a
member alone costs its own run, and joins a group only when what it adds costs less than the start it saves.
Windows are estimated from what each member's filters select in the trace. Exact up to EXACT_MEMBERS members
(dynamic programming over subsets); beyond, the best cut into runs contiguous in launch order, improved by
moving single members and merging groups while the cost falls."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.cost import UNCALIBRATED, Costs, alone_seconds, group_seconds, per_launch_s
from ncucampaign.plan.share.union import SET_BY_UNION, picks_possible, union_options
from ncucampaign.plan.share.windows import picked_ids

EXACT_MEMBERS = 10
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


def partition(placed: Sequence[Placed], costs: Costs = UNCALIBRATED) -> list[list[Placed]]:
    """The groups (in launch order; a group of one runs alone) of least total estimated cost."""
    ordered = sorted(placed, key=lambda p: (p.wanted[0], p.wanted[-1], p.member.name))
    position = {id(p): index for index, p in enumerate(ordered)}
    classes = _option_classes(ordered)
    prices: dict[frozenset[int], float] = {}
    union_prices: dict[tuple[int, ...], UnionPrice] = {}  # the exact partition meets 2^n groups, few unions

    def cost(group: list[Placed]) -> float:  # a group is priced once, however often it is met
        key = frozenset(position[id(p)] for p in group)
        if key not in prices:
            kinds = tuple(dict.fromkeys(classes[position[id(p)]] for p in group))
            if kinds not in union_prices:
                union_prices[kinds] = union_price(group)
            prices[key] = group_cost(group, costs, union_prices[kinds])
        return prices[key]

    if len(ordered) <= EXACT_MEMBERS:
        return _exact(ordered, cost)
    # Two starting points, each improved: launch order across all members, and launch order within
    # each family (the same filters) when families interleave.
    families: dict[tuple[object, ...], list[Placed]] = {}
    for placed_member in ordered:
        families.setdefault(placed_member.family, []).append(placed_member)
    by_family = [group for family in families.values() for group in _contiguous(family, cost)]
    candidates = [_improve(_contiguous(ordered, cost), cost), _improve(by_family, cost)]
    groups = min(candidates, key=lambda found: sum(cost(group) for group in found))
    return sorted(groups, key=lambda group: min(p.wanted[0] for p in group))


def _option_classes(ordered: Sequence[Placed]) -> list[int]:
    """Per member, the class of members whose options make the same union (they differ only in what the union
    sets itself), numbered in order."""
    found: dict[tuple[object, ...], int] = {}
    keys = [tuple(_hashable(v) for k, v in p.member.options if k not in SET_BY_UNION) for p in ordered]
    return [found.setdefault(key, len(found)) for key in keys]


def _hashable(value: object) -> object:
    return tuple(sorted(value.items())) if isinstance(value, dict) else value  # `env`: the one mapping


@dataclass(frozen=True)
class KeptPartition:
    """The groups an earlier run on the same trace chose (member names; a group of one ran alone), and what they
    measured: their shared runs' seconds, and the priced own run of every member that ran alone."""

    groups: tuple[tuple[str, ...], ...]
    measured_s: float


def held_still(
    found: list[list[Placed]], kept: KeptPartition | None, costs: Costs = UNCALIBRATED
) -> list[list[Placed]]:
    """The groups to run: `found`, unless an earlier run on this trace measured groups of the same members
    cheaper than `found` is priced; then those (each cached run refitted its costs and chose
    other groups, 2, then 1, then 3; a cached run never picks groups priced above what they measured)."""
    by_name = {p.member.name: p for group in found for p in group}
    if kept is None or sorted(name for group in kept.groups for name in group) != sorted(by_name):
        return found
    if sum(group_cost(group, costs) for group in found) < kept.measured_s:
        return found
    groups = [[by_name[name] for name in group] for group in kept.groups]
    return sorted(groups, key=lambda group: min(p.wanted[0] for p in group))


def _exact(ordered: list[Placed], cost: Callable[[list[Placed]], float]) -> list[list[Placed]]:
    """Every set partition: best(S) = min over the groups T holding S's lowest member of cost(T) + best(S - T)."""
    count = len(ordered)

    def members(mask: int) -> list[Placed]:
        return [ordered[i] for i in range(count) if mask >> i & 1]

    @cache
    def priced(mask: int) -> float:
        return cost(members(mask))

    @cache
    def best(mask: int) -> tuple[float, tuple[int, ...]]:
        if not mask:
            return 0.0, ()
        low = mask & -mask
        rest = mask ^ low
        found: tuple[float, tuple[int, ...]] | None = None
        sub = rest
        while True:  # every subset of the rest, with the lowest member added
            group = sub | low
            tail_cost, tail = best(mask ^ group)
            total = priced(group) + tail_cost
            if found is None or total < found[0] - 1e-9:
                found = (total, (group, *tail))
            if sub == 0:
                break
            sub = (sub - 1) & rest
        return found

    _, groups = best((1 << count) - 1)
    return sorted((members(group) for group in groups), key=lambda g: g[0].wanted[0])


def _contiguous(ordered: list[Placed], cost: Callable[[list[Placed]], float]) -> list[list[Placed]]:
    """The best split of the launch-ordered members into consecutive runs (O(n^2) groups priced)."""
    count = len(ordered)
    best: list[tuple[float, int]] = [(0.0, 0)] + [(float("inf"), 0)] * count
    for end in range(1, count + 1):
        for start in range(end):
            total = best[start][0] + cost(ordered[start:end])
            if total < best[end][0] - 1e-9:
                best[end] = (total, start)
    groups, end = [], count
    while end:
        start = best[end][1]
        groups.append(ordered[start:end])
        end = start
    return groups[::-1]


def _improve(groups: list[list[Placed]], cost: Callable[[list[Placed]], float]) -> list[list[Placed]]:
    """Local search: the best single move (a member to another group or alone, or two groups merged)
    while one lowers the total; at most a few rounds per member."""
    groups = [list(group) for group in groups]
    for _ in range(4 * sum(len(group) for group in groups)):
        prices = [cost(group) for group in groups]
        best_gain, best_groups = 1e-9, None
        for a, group in enumerate(groups):
            for member in group:
                rest = [p for p in group if p is not member]
                for b in [*range(len(groups)), None]:
                    if b == a:
                        continue
                    joined = [member] if b is None else [*groups[b], member]
                    before = prices[a] + (0.0 if b is None else prices[b])
                    gain = before - (cost(rest) if rest else 0.0) - cost(joined)
                    if gain > best_gain:
                        moved = (
                            [g for i, g in enumerate(groups) if i not in (a, b)] + [joined] + ([rest] if rest else [])
                        )
                        best_gain, best_groups = gain, moved
            for b in range(a + 1, len(groups)):
                gain = prices[a] + prices[b] - cost([*group, *groups[b]])
                if gain > best_gain:
                    merged = [g for i, g in enumerate(groups) if i not in (a, b)] + [[*group, *groups[b]]]
                    best_gain, best_groups = gain, merged
        if best_groups is None:
            return groups
        groups = best_groups
    return groups
