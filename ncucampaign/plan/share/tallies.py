"""A trace pool's group prices from running tallies, for the partition's search (plan/share/partition.py). Pure.
`group_cost` (pricing.py) prices a group from its members, listing what their union selects; a search prices
thousands of groups that differ by one member. A tally keeps what decides the price (the first and last wanted
launch, the filters and options present, the wanted launches' function names and invocation numbers) as members
join and leave. What a set of filters selects is a bitmask of trace IDs, made once per set, and the launches in a
window are counted by popcount. The price equals group_cost's (tests/plan/test_partition_search.py)."""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ncucampaign.plan.share.cost import Costs, alone_seconds, group_seconds
from ncucampaign.plan.share.pricing import Placed, UnionPrice
from ncucampaign.plan.share.union import collects_default_set
from ncucampaign.spec.ncu_grammar import split_regex


def bitmask(ids: Iterable[int]) -> int:
    """The trace IDs as the bits of one integer (linear: a bytearray, then one conversion)."""
    found = list(ids)
    bits = bytearray((max(found) >> 3) + 1 if found else 0)
    for i in found:
        bits[i >> 3] |= 1 << (i & 7)
    return int.from_bytes(bits, "little")


def upto(mask: int, last: int) -> int:
    """How many of the launches in `mask` have an ID of at most `last`."""
    return (mask & ((2 << last) - 1)).bit_count() if last >= 0 else 0


@dataclass(frozen=True)
class Selection:
    """What the union of a set of filters selects, and per function name the launches of it that it selects
    (empty when some selected launch has no function name: picked windows are not priced then)."""

    mask: int
    functions: dict[str, int]


class PoolPrices:
    """Prices for the groups of one pool: `ordered` as the partition orders it, `classes` its option classes (members
    of one class make the same union), `union_price` what a group's options make of its price; a group that
    profiles more launches than a union may (cost.UNION_LAUNCHES) is not to be run (its price is infinite)."""

    def __init__(
        self,
        ordered: Sequence[Placed],
        costs: Costs,
        classes: Sequence[int],
        union_price: Callable[[Sequence[Placed]], UnionPrice],
    ) -> None:
        self.members, self.costs, self.classes, self._union_price = ordered, costs, classes, union_price
        self.first = [p.wanted[0] for p in ordered]
        self.last = [p.wanted[-1] for p in ordered]
        self.alone = [alone_seconds(p.member, costs) for p in ordered]
        keys: dict[tuple[object, ...], int] = {}  # members with the same filters share a key
        self.key = [keys.setdefault((p.kernels, p.scope, p.selected), len(keys)) for p in ordered]
        first_of = {key: index for index, key in reversed(list(enumerate(self.key)))}
        self._kernels = {key: _mask(ordered[i].kernels) for key, i in first_of.items()}
        self._scopes = {key: _mask(ordered[i].scope) for key, i in first_of.items()}
        self._own = {key: bitmask(ordered[i].selected) for key, i in first_of.items()}
        self._selections: dict[frozenset[int], Selection] = {}
        self._unions: dict[frozenset[int], UnionPrice] = {}
        self._by_features: dict[tuple[frozenset[object], ...], UnionPrice] = {}
        first_in_class = {c: i for i, c in reversed(list(enumerate(classes)))}
        self._features = {c: _features(ordered[i]) for c, i in first_in_class.items()}
        self.function_of = dict(costs.functions or {})
        by_name: dict[str, list[int]] = {}
        for launch, name in self.function_of.items():
            by_name.setdefault(name, []).append(launch)
        self._function_masks = {name: bitmask(ids) for name, ids in by_name.items()}
        self._named = bitmask(self.function_of)

    def selection(self, keys: frozenset[int]) -> Selection:
        """What the union of members with these filters selects (pricing.selected_ids), made once per set."""
        found = self._selections.get(keys)
        if found is None:
            if all(self._kernels[k] is not None for k in keys):
                mask = _or(self._kernels[k] for k in keys)
                if all(self._scopes[k] is not None for k in keys):
                    mask &= _or(self._scopes[k] for k in keys)
            else:
                mask = _or(self._own[k] for k in keys)
            named = bool(self.function_of) and not mask & ~self._named
            functions = {n: m & mask for n, m in self._function_masks.items() if m & mask} if named else {}
            found = self._selections[keys] = Selection(mask, functions)
        return found

    def price(self, tally: Tally) -> float:
        """The group's estimated seconds, as pricing.group_cost prices it."""
        if len(tally.members) == 1:
            return self.alone[next(iter(tally.members))]
        first, last = tally.firsts[0], tally.lasts[-1]
        selection = self.selection(frozenset(tally.keys))
        picks, launch_s = self._union(tally)
        launches = upto(selection.mask, last) - upto(selection.mask, first - 1)
        if picks and selection.functions:
            launches = min(launches, self._picked(tally, selection, last))
        if launches > self.costs.launches_at_most:
            return math.inf
        return group_seconds(launches * launch_s, len(tally.members), self.costs)

    def _union(self, tally: Tally) -> UnionPrice:
        """What the group's options make of its price, once per set of option classes, and once per what decides it:
        the sets, sections and metrics collected, and whether the union's kernel filter can name functions."""
        classes = frozenset(tally.kinds)
        price = self._unions.get(classes)
        if price is None:
            features = [self._features[c] for c in classes]
            key = tuple(frozenset().union(*(f[i] for f in features)) for i in range(len(features[0])))
            if key not in self._by_features:
                self._by_features[key] = self._union_price([self.members[i] for i in tally.members])
            price = self._unions[classes] = self._by_features[key]
        return price

    def _picked(self, tally: Tally, selection: Selection, last: int) -> int:
        """How many launches `--kernel-id` picks (windows.picked_ids): the launches up to `last` whose number among
        their function's selected launches is a wanted launch's; only the wanted functions' where the union's filter
        matches other functions too and no wanted name holds a ':'."""
        numbers = tally.numbers(self, selection)
        names = tally.names
        named = len(selection.functions) > len(names) and not any(":" in name for name in names)
        functions = names if named else selection.functions
        return sum(bisect_right(numbers, upto(selection.functions[name], last)) for name in functions)

    def number(self, launch: int, selection: Selection) -> int:
        """The launch's invocation number among its function's launches that the selection holds (from 1)."""
        return upto(selection.functions[self.function_of[launch]], launch)

    def tally(self, members: Iterable[int] = ()) -> Tally:
        tally = Tally()
        for index in members:
            tally.add(self, index)
        return tally


class Tally:
    """A group's members and what decides its price, kept as members join and leave."""

    def __init__(self) -> None:
        self.members: set[int] = set()
        self.firsts: list[int] = []  # sorted: the first is the group's first wanted launch
        self.lasts: list[int] = []  # sorted: the last is its last
        self.keys: Counter[int] = Counter()  # filters present
        self.kinds: Counter[int] = Counter()  # option classes present
        self.wanted: dict[str | None, Counter[int]] = {}  # by function name: wanted trace IDs (with repeats)
        self.names: Counter[str] = Counter()  # their function names
        # The wanted launches' invocation numbers under one selection, by function, and all of them (distinct,
        # sorted): a function's are numbered again only when the selection of its launches changes.
        self._numbering: Selection | None = None
        self._stale: set[str] = set()
        self._by_function: dict[str, Counter[int]] = {}
        self._all: Counter[int] = Counter()
        self._numbers: list[int] = []

    def add(self, prices: PoolPrices, index: int) -> None:
        self.members.add(index)
        insort(self.firsts, prices.first[index])
        insort(self.lasts, prices.last[index])
        self.keys[prices.key[index]] += 1
        self.kinds[prices.classes[index]] += 1
        self._change(prices, index, +1)

    def remove(self, prices: PoolPrices, index: int) -> None:
        self.members.discard(index)
        self.firsts.remove(prices.first[index])
        self.lasts.remove(prices.last[index])
        _count(self.keys, prices.key[index], -1)
        _count(self.kinds, prices.classes[index], -1)
        self._change(prices, index, -1)

    def _change(self, prices: PoolPrices, index: int, by: int) -> None:
        """The member's wanted launches in or out, numbered under the selection the others are numbered under."""
        for launch in prices.members[index].wanted:
            name = prices.function_of.get(launch)
            launches = self.wanted.get(name)
            if launches is None:
                launches = self.wanted[name] = Counter()
            _count(launches, launch, by)
            if name is None:
                continue
            _count(self.names, name, by)
            if self._numbering is None or name in self._stale:
                continue
            mask = self._numbering.functions.get(name)
            if mask is None:
                self._stale.add(name)
            else:
                self._count_number(name, upto(mask, launch), by)

    def _count_number(self, name: str, number: int, by: int) -> None:
        numbers = self._by_function.get(name)
        if numbers is None:
            numbers = self._by_function[name] = Counter()
        _count(numbers, number, by)
        self._count_all(number, by)

    def _count_all(self, number: int, by: int) -> None:
        before = self._all[number]
        _count(self._all, number, by)
        if not before:
            insort(self._numbers, number)
        elif not self._all[number]:
            self._numbers.remove(number)

    def numbers(self, prices: PoolPrices, selection: Selection) -> list[int]:
        """The wanted launches' invocation numbers under `selection` (the filters present), distinct and sorted."""
        if self._numbering is not selection:
            old = self._numbering
            stale = self._stale | {
                name for name in self.names if old is None or old.functions.get(name) != selection.functions.get(name)
            }
            for name in stale:
                for number, count in self._by_function.pop(name, {}).items():
                    for _ in range(count):
                        self._count_all(number, -1)
                for launch, count in self.wanted.get(name, {}).items():
                    number = prices.number(launch, selection)
                    for _ in range(count):
                        self._count_number(name, number, +1)
            self._numbering, self._stale = selection, set()
        return self._numbers


def _count(counter: Counter[Any], item: object, by: int) -> None:
    count = counter.get(item, 0) + by
    if count:
        counter[item] = count
    else:
        del counter[item]


def _features(placed: Placed) -> tuple[frozenset[object], ...]:
    """What a member adds to its union's price (pricing.union_price), as sets a union ORs: the sets and sections it
    collects, whether it asks for metrics or for ncu's default set, and how its kernel filter reads (none, or holding
    a ':', which a picked window cannot name). The other options that decide it are the pool's own."""
    o = placed.member.options
    body = split_regex(o.kernel_name)[1] if o.kernel_name is not None else None
    return (
        frozenset({o.section_set}),
        frozenset(o.sections or ()),
        frozenset({"metrics"} if o.metrics else ()) | frozenset({"default set"} if collects_default_set(o) else ()),
        frozenset({"no kernel filter"} if body is None else {"':'"} if ":" in body else ()),
    )


def _or(masks: Iterable[int | None]) -> int:
    found = 0
    for mask in masks:
        found |= mask or 0
    return found


def _mask(ids: Iterable[int] | None) -> int | None:
    return None if ids is None else bitmask(ids)
