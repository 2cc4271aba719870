"""The partition's local search (plan/share/partition.py): the best single move, a member to another group or alone,
or two groups merged, while one lowers the total. Pure. A move changes two groups and leaves every other price
alone, so the prices it needs (each group's; each member's group without it; each member joined to each other
group; each two groups merged) are kept until a group they depend on changes: a round after the first prices what
the last move changed, not every pair again. Groups are visited in the order earlier versions kept them in (the
kept ones, then the one a member joined, then the one it left), so that ties fall the same way."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator
from dataclasses import dataclass

from ncucampaign.plan.share.tallies import PoolPrices, Tally

Groups = list[list[int]]
GAIN_AT_LEAST = 1e-9  # a move must lower the total by more than rounding


@dataclass(frozen=True)
class Move:
    group: int  # the group a member leaves, or the first of two merged
    member: int | None  # None: the two groups merge
    to: int | None  # the group it joins (None: alone), or the second merged


class Moves:
    def __init__(
        self, prices: PoolPrices, groups: Groups, price: Callable[[Tally], float], priced: Callable[[], int]
    ) -> None:
        """`price` prices a group (and counts it); `priced` says how many prices the search took so far."""
        self.prices, self._price, self._priced = prices, price, priced
        self._ids = itertools.count()
        self.order: list[int] = []
        self.members: dict[int, list[int]] = {}
        self.tallies: dict[int, Tally] = {}
        self.seconds: dict[int, float] = {}
        self._rest: dict[int, float] = {}  # member -> its group's price without it
        self._join: dict[int, dict[int, float]] = {}  # group -> member -> the group's price with it
        self._merge: dict[int, dict[int, float]] = {}  # group -> group -> their price together (both ways)
        for group in groups:
            self._enter(list(group), prices.tally(group))

    def groups(self) -> Groups:
        return [list(self.members[g]) for g in self.order]

    def round_prices(self) -> int:
        """At most how many prices the next `best` takes: those it does not know yet."""
        groups, members = len(self.order), sum(len(self.members[g]) for g in self.order)
        joins = members * groups - sum(len(known) for known in self._join.values())
        merges = groups * (groups - 1) // 2 - sum(len(known) for known in self._merge.values()) // 2
        rests = members - len(self._rest)
        return max(0, joins) + max(0, merges) + max(0, rests)

    def best(self, tick: int) -> Generator[int, None, Move | None]:
        """The move that lowers the total most (the first of equals, in visiting order), or None; yielding the prices
        taken so far every `tick` of them (its caller may stop between)."""
        best_gain, best = GAIN_AT_LEAST, None
        since = self._priced()
        for position, a in enumerate(self.order):
            for member in self.members[a]:
                if self._priced() - since >= tick:
                    since = self._priced()
                    yield since
                rest = self._rest_of(a, member)
                for b in [*self.order, None]:
                    if b == a:
                        continue
                    joined = self.prices.alone[member] if b is None else self._joined(b, member)
                    gain = self.seconds[a] + (0.0 if b is None else self.seconds[b]) - rest - joined
                    if gain > best_gain:
                        best_gain, best = gain, Move(a, member, b)
            for b in self.order[position + 1 :]:
                gain = self.seconds[a] + self.seconds[b] - self._merged(a, b)
                if gain > best_gain:
                    best_gain, best = gain, Move(a, None, b)
        return best

    def apply(self, move: Move) -> None:
        a, b = move.group, move.to
        if move.member is None:
            assert b is not None
            tally = self.tallies[a]
            for member in self.members[b]:
                tally.add(self.prices, member)
            merged = [*self.members[a], *self.members[b]]
            self._leave(a, b)
            self._enter(merged, tally)
            return
        member = move.member
        rest = [m for m in self.members[a] if m != member]
        rest_tally = self.tallies[a]
        rest_tally.remove(self.prices, member)
        joined = [member] if b is None else [*self.members[b], member]
        joined_tally = self.prices.tally([member]) if b is None else self.tallies[b]
        if b is not None:
            joined_tally.add(self.prices, member)
        self._leave(a, b)
        self._enter(joined, joined_tally)
        if rest:
            self._enter(rest, rest_tally)

    def _enter(self, members: list[int], tally: Tally) -> None:
        group = next(self._ids)
        self.order.append(group)
        self.members[group], self.tallies[group] = members, tally
        self.seconds[group] = self._price(tally)
        self._join[group], self._merge[group] = {}, {}
        for member in members:
            self._rest.pop(member, None)

    def _leave(self, *groups: int | None) -> None:
        for group in groups:
            if group is None:
                continue
            self.order.remove(group)
            for partner in self._merge.pop(group):
                self._merge.get(partner, {}).pop(group, None)
            del self.members[group], self.tallies[group], self.seconds[group], self._join[group]

    def _rest_of(self, group: int, member: int) -> float:
        found = self._rest.get(member)
        if found is None:
            if len(self.members[group]) == 1:
                found = 0.0
            else:
                tally = self.tallies[group]
                tally.remove(self.prices, member)
                found = self._price(tally)
                tally.add(self.prices, member)
            self._rest[member] = found
        return found

    def _joined(self, group: int, member: int) -> float:
        known = self._join[group]
        found = known.get(member)
        if found is None:
            tally = self.tallies[group]
            tally.add(self.prices, member)
            found = known[member] = self._price(tally)
            tally.remove(self.prices, member)
        return found

    def _merged(self, a: int, b: int) -> float:
        found = self._merge[a].get(b)
        if found is None:
            found = self._price(self.prices.tally([*self.members[a], *self.members[b]]))
            self._merge[a][b] = self._merge[b][a] = found
        return found
