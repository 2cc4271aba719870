"""A metric's history across runs, and where it changed. Pure. Runs in order (the workload's first-parent
commits, else time), in segments of one setting (GPU, ncu, clock control): a setting's change is a marker, not a
regression. In a segment, change points come by recursive splits, each boundary tested with compare's statistics
on up to WINDOW runs a side; the most significant beyond the threshold is a change, UNCONFIRMED while only the
newest run shows it. Exact metrics are CHANGED where they moved."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from ncucampaign.results.gate.verdicts import ALPHA, Verdict, duration_decision

WINDOW = 3  # runs a side pooled to test a boundary
# Samples of one run share that run's conditions (its clocks, its neighbours on the machine): pooled
# across runs they overstate significance, so history asks for a larger shift than compare's 3%
# (tests/results/test_history.py: 1,000 noise-only series, false changes <= 1%).
HISTORY_THRESHOLD = 0.05


@dataclass(frozen=True)
class Point:
    """One run's samples of one target's metric, and the setting it ran with."""

    run: str
    commit: str | None
    setting: tuple[str, ...]  # GPU model, ncu version, clock control
    samples: tuple[float, ...]

    @cached_property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else 0.0


@dataclass(frozen=True)
class Change:
    at: int  # the index of the first run of the new segment
    verdict: str  # SLOWER, FASTER, CHANGED, UNCONFIRMED
    shift: float | None  # relative, of the medians' windows
    p_value: float | None
    before: float  # median of the window before
    after: float
    direction: str = ""  # for UNCONFIRMED: what it would be (SLOWER or FASTER)


def segments(points: Sequence[Point]) -> list[tuple[int, int]]:
    """[start, end) of each run of one setting, in order."""
    bounds = [0] + [i for i in range(1, len(points)) if points[i].setting != points[i - 1].setting] + [len(points)]
    return list(itertools.pairwise(bounds))


def changes(points: Sequence[Point], exact: bool = False, threshold: float = HISTORY_THRESHOLD) -> list[Change]:
    """Every change of the series, in order; each setting's segment on its own."""
    found: list[Change] = []
    for start, end in segments(points):
        found += _exact_changes(points, start, end) if exact else _splits(points, start, end, threshold, 0.0, end)
    return sorted(found, key=lambda change: change.at)


def _pooled(points: Sequence[Point], start: int, end: int) -> list[float]:
    return [value for point in points[start:end] for value in point.samples]


def _splits(points: Sequence[Point], start: int, end: int, threshold: float, alpha: float, last: int) -> list[Change]:
    """The changes in [start, end): a new segment holds two runs at least, but for the newest run
    alone (UNCONFIRMED), and its first runs each agree with the shift, so that one outlying run is no
    change. `alpha`: the segment's, divided by every boundary it has (also in the searches within);
    `last`: the end of the setting's segment, whose newest run alone may start an UNCONFIRMED one."""
    newest = end == last
    boundaries = [at for at in range(start + 2, end - 1 + newest) if end - at >= 2 or (newest and at == end - 1)]
    alpha = alpha or ALPHA / max(1, end - start - 1)
    tested = {at: _tested(points, start, end, at, threshold, alpha) for at in boundaries}
    found = [change for change in tested.values() if change is not None]
    if not found:
        return []
    best = min(found, key=lambda c: (c.p_value if c.p_value is not None else 1.0, -abs(c.shift or 0.0)))
    # Where exactly: of the boundaries next to it that also test as a change, the one that splits the
    # whole range's run medians into the tightest two groups (the windows alone misplace it by one
    # when a run next to the step is noisy).
    at = min(
        (b for b in (best.at - 1, best.at, best.at + 1) if b in tested),
        key=lambda b: _spread_split(points, start, end, b),
    )
    if at != best.at:
        sides = ((max(start, at - WINDOW), at), (at, min(end, at + WINDOW)))
        before, after = _pooled(points, *sides[0]), _pooled(points, *sides[1])
        shift = _level_shift(points, *sides)
        best = Change(at, best.verdict, shift, best.p_value, statistics.median(before), statistics.median(after))
    if best.at == last - 1 and newest:  # the newest run alone: not yet confirmed
        best = Change(best.at, "UNCONFIRMED", best.shift, best.p_value, best.before, best.after, best.verdict)
    left = _splits(points, start, best.at, threshold, alpha, last)
    right = _splits(points, best.at, end, threshold, alpha, last)
    return [*left, best, *right]


def _tested(points: Sequence[Point], start: int, end: int, at: int, threshold: float, alpha: float) -> Change | None:
    """The boundary before run `at` as a change, or None: significant on the windows' pooled samples, as large between
    the runs' own medians, both windows free of an outlying run, and the new segment's first runs agreeing."""
    sides = ((max(start, at - WINDOW), at), (at, min(end, at + WINDOW)))
    if not all(_homogeneous(points, side, threshold) for side in sides):
        return None  # a window holding an outlying run: its pooled samples would test the outlier
    before, after = _pooled(points, *sides[0]), _pooled(points, *sides[1])
    decision = duration_decision(before, after, threshold, alpha)
    shift = _level_shift(points, *sides)
    if decision.verdict not in (Verdict.SLOWER, Verdict.FASTER) or abs(shift) < threshold:
        return None
    if not _agree(points, at, end, before, threshold):
        return None
    verdict = Verdict.SLOWER if shift > 0 else Verdict.FASTER
    return Change(at, verdict.value, shift, decision.p_value, statistics.median(before), statistics.median(after))


def _spread_split(points: Sequence[Point], start: int, end: int, at: int) -> float:
    """The sum of squared deviations of the run medians from their side's mean, split before `at`."""
    total = 0.0
    for a, b in ((start, at), (at, end)):
        medians = _medians(points, a, b)
        if medians:
            mean = statistics.fmean(medians)
            total += sum((m - mean) ** 2 for m in medians)
    return total


def _level_shift(points: Sequence[Point], before: tuple[int, int], after: tuple[int, int]) -> float:
    """The relative move between the medians of the runs' medians on each side: one outlying run in a
    window moves it little (the pooled samples' shift, much)."""
    levels = [_level(points, *side) for side in (before, after)]
    return levels[1] / levels[0] - 1 if levels[0] else 0.0


def _homogeneous(points: Sequence[Point], side: tuple[int, int], threshold: float) -> bool:
    """No run of the window lies further than 1.5 thresholds from the window's level."""
    level = _level(points, *side)
    return bool(level) and all(abs(m / level - 1) <= 1.5 * threshold for m in _medians(points, *side))


def _medians(points: Sequence[Point], start: int, end: int) -> list[float]:
    """The runs' own medians in [start, end)."""
    return [p.median for p in points[start:end] if p.samples]


def _level(points: Sequence[Point], start: int, end: int) -> float:
    """The median of the runs' medians in [start, end): one outlying run moves it little."""
    medians = _medians(points, start, end)
    return statistics.median(medians) if medians else 0.0


def _agree(points: Sequence[Point], at: int, end: int, before: Sequence[float], threshold: float) -> bool:
    """The new segment's first runs (two, or the newest alone) each moved half the threshold at least,
    the same way: one outlying run followed by the old level is no step."""
    level = statistics.median(before)
    moves = [m / level - 1 for m in _medians(points, at, min(end, at + 2))]
    return bool(moves) and (all(m >= threshold / 2 for m in moves) or all(m <= -threshold / 2 for m in moves))


def _exact_changes(points: Sequence[Point], start: int, end: int) -> list[Change]:
    found = []
    for at in range(start + 1, end):
        old, new = set(points[at - 1].samples), set(points[at].samples)
        if old and new and old != new:
            found.append(Change(at, "CHANGED", None, None, points[at - 1].median, points[at].median))
    return found


def newest_confirmed(found: Sequence[Change]) -> Change | None:
    confirmed = [change for change in found if change.verdict != "UNCONFIRMED"]
    return confirmed[-1] if confirmed else None
