"""Which members of a trace pool profile together: the partition of least estimated cost (plan/share/pricing.py
prices a group). Pure. Exact up to EXACT_MEMBERS members (dynamic programming over subsets). Beyond, the best cut
into runs contiguous in launch order, then adjacent groups merged while that is cheaper, then single members moved
and groups merged while the cost falls; the same from each family's launch order, and the cheaper of the two. Each
stage is bounded by work, not by the pool's size to a power: a cut's groups hold at most a window of members that
shrinks as the pool grows (all of them up to WINDOW_AT_MOST), and the moves stop after a budget of prices. A
union profiles at most UNION_LAUNCHES launches (plan/share/cost.py)."""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from functools import cache

from ncucampaign.plan.share.cost import UNCALIBRATED, Costs
from ncucampaign.plan.share.moves import Moves
from ncucampaign.plan.share.pricing import Placed, group_cost, union_price
from ncucampaign.plan.share.tallies import PoolPrices, Tally
from ncucampaign.plan.share.union import SET_BY_UNION

EXACT_MEMBERS = 10
SEARCH_PRICES = 30_000  # prices a cut may take: its window is this over the pool's size (at least WINDOW_AT_LEAST)
WINDOW_AT_LEAST, WINDOW_AT_MOST = 12, 200
MOVE_PRICES = 60_000  # prices the moves may take
TICK = 2_000  # prices between the points where the search lets its caller stop it
Groups = list[list[int]]


def partition(placed: Sequence[Placed], costs: Costs = UNCALIBRATED) -> list[list[Placed]]:
    """The groups (in launch order; a group of one runs alone) of least total estimated cost."""
    search = Search(placed, costs)
    for _ in search:
        pass
    return search.groups


class Search:
    """The partition's search, iterated: each step is a bounded slice of its work, so that a caller who must answer a
    stop asks no more; `groups` holds the result once the iteration ends."""

    def __init__(self, placed: Sequence[Placed], costs: Costs = UNCALIBRATED) -> None:
        self.ordered = sorted(placed, key=lambda p: (p.wanted[0], p.wanted[-1], p.member.name))
        self.prices = PoolPrices(self.ordered, costs, _option_classes(self.ordered), union_price)
        self.groups: list[list[Placed]] = []
        self.priced = 0  # prices taken so far

    def __iter__(self) -> Iterator[int]:
        count = len(self.ordered)
        if count <= EXACT_MEMBERS:
            found = _exact(count, self._cost)
        else:
            families: dict[tuple[object, ...], list[int]] = {}
            for index, placed_member in enumerate(self.ordered):
                families.setdefault(placed_member.family, []).append(index)
            candidates: list[Groups] = []
            for starts in ([list(range(count))], list(families.values())):
                groups: Groups = []
                for members in starts:
                    groups += yield from self._contiguous(members)
                merged = yield from self._merged(groups)
                candidates.append((yield from self._improve(merged)))
            found = min(candidates, key=lambda groups: sum(self._cost(group) for group in groups))
        placed = [[self.ordered[i] for i in sorted(group)] for group in found]
        self.groups = sorted(placed, key=lambda group: min(p.wanted[0] for p in group))

    def _cost(self, members: Sequence[int]) -> float:
        self.priced += 1
        return self.prices.price(self.prices.tally(members))

    def _price(self, tally: Tally) -> float:
        self.priced += 1
        return self.prices.price(tally)

    def _ticks(self, since: int) -> bool:
        return self.priced // TICK != since // TICK

    def _contiguous(self, members: list[int]) -> Generator[int, None, Groups]:
        """The best split of launch-ordered members into consecutive runs, each of at most `window` members."""
        count = len(members)
        window = min(count, max(WINDOW_AT_LEAST, min(WINDOW_AT_MOST, SEARCH_PRICES // max(count, 1))))
        if count <= WINDOW_AT_MOST:
            window = count  # every cut: the search of earlier versions, as exact as it was
        best: list[tuple[float, int]] = [(0.0, 0)] + [(math.inf, 0)] * count
        for end in range(1, count + 1):
            since = self.priced
            tally = Tally()
            for start in range(end - 1, max(end - window, 0) - 1, -1):
                tally.add(self.prices, members[start])
                total = best[start][0] + self._price(tally)
                if total < best[end][0] - 1e-9 or (total <= best[end][0] + 1e-9 and start < best[end][1]):
                    best[end] = (total, start)
            if self._ticks(since):
                yield self.priced
        groups, end = [], count
        while end:
            start = best[end][1]
            groups.append(members[start:end])
            end = start
        return groups[::-1]

    def _merged(self, groups: Groups) -> Generator[int, None, Groups]:
        """Adjacent groups (in launch order) merged, the most gainful first, while a merge is cheaper: a cut's
        window bounds a group's members, a merge does not. A merge reprices only its new neighbours."""
        if sum(len(group) for group in groups) <= WINDOW_AT_MOST:
            return groups
        groups = [list(group) for group in groups]
        prices = [self._cost(group) for group in groups]
        gains = [self._gain(groups, prices, i) for i in range(len(groups) - 1)]
        while gains:
            since = self.priced
            best = max(range(len(gains)), key=gains.__getitem__)
            if gains[best] <= 1e-9:
                break
            groups[best : best + 2] = [groups[best] + groups[best + 1]]
            prices[best : best + 2] = [self._cost(groups[best])]
            del gains[best]
            for i in (best - 1, best):
                if 0 <= i < len(gains):
                    gains[i] = self._gain(groups, prices, i)
            if self._ticks(since):
                yield self.priced
        return groups

    def _gain(self, groups: Groups, prices: list[float], i: int) -> float:
        """What merging groups i and i + 1 saves."""
        return prices[i] + prices[i + 1] - self._cost(groups[i] + groups[i + 1])

    def _improve(self, groups: Groups) -> Generator[int, None, Groups]:
        """Local search (plan/share/moves.py), as long as the budget of prices lasts."""
        moves = Moves(self.prices, groups, self._price, lambda: self.priced)
        budget = self.priced + MOVE_PRICES
        members = sum(len(group) for group in groups)
        for _ in range(4 * members):
            since = self.priced
            if since + moves.round_prices() > budget:
                break
            move = yield from moves.best(TICK)
            if move is None:
                break
            moves.apply(move)
            if self._ticks(since):
                yield self.priced
        return moves.groups()


def _option_classes(ordered: Sequence[Placed]) -> list[int]:
    """Per member, the class of members whose options make the same union (they differ only in what the union
    sets itself), numbered in order."""
    found: dict[tuple[object, ...], int] = {}
    keys = [tuple(_hashable(v) for k, v in p.member.options if k not in SET_BY_UNION) for p in ordered]
    return [found.setdefault(key, len(found)) for key in keys]


def _hashable(value: object) -> object:
    return tuple(sorted(value.items())) if isinstance(value, dict) else value  # `env`: the one mapping


def _exact(count: int, cost: Callable[[Sequence[int]], float]) -> Groups:
    """Every set partition: best(S) = min over the groups T holding S's lowest member of cost(T) + best(S - T)."""

    def members(mask: int) -> list[int]:
        return [i for i in range(count) if mask >> i & 1]

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
    return [members(group) for group in groups]


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
