"""Verdicts on repeated samples: SAME, FASTER, SLOWER, AMBIGUOUS or CHANGED, with the reason. Pure. Durations
are noisy (one 3 us kernel profiled 8 times spans 11%): SLOWER or FASTER only when a Mann-Whitney test finds the
samples different (p <= alpha) and the Hodges-Lehmann shift reaches the practical threshold; SAME within it;
AMBIGUOUS otherwise, with the samples a side that would decide. Cycles where SM clocks differ. Launch
configuration and work counters are near deterministic: any difference is CHANGED."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from ncucampaign.execute.rundir.manifest import Manifest, TargetRecord
from ncucampaign.execute.rundir.status import Status

ALPHA = 0.01  # two-sided; asv uses 0.002 with a 10% factor, nvbench confirms gaps in cycles
# The practical threshold: smaller shifts are SAME even when significant. Below the 5% a CI gate must
# catch; above what a 1% change shows with 32 samples a side of a kernel with 3.7% spread
# (tests/results/test_verdicts.py).
THRESHOLD = 0.03
# With too few samples for the rank test, a shift at least this large decides by itself: run-to-run
# noise of one 3 us kernel reached 15-18% between runs on the H200 (docs/ncu-behaviour.md, "Shared runs").
SIZE_THRESHOLD = 0.25
CLOCK_TOLERANCE = 0.02  # SM frequencies further apart than this are different clocks
_EXACT_LIMIT = 24  # pooled samples up to which the rank test is exact (a subset-sum count, ~20 ms)


class Verdict(StrEnum):
    SAME = "SAME"
    FASTER = "FASTER"
    SLOWER = "SLOWER"
    AMBIGUOUS = "AMBIGUOUS"
    CHANGED = "CHANGED"


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str
    p_value: float | None = None
    shift: float | None = None  # median(B) / median(A) - 1 of what was tested
    samples_needed: int | None = None  # a side, where AMBIGUOUS for want of samples


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the rank-sum test, exact over every split of the pooled midranks (ties kept: durations are
    multiples of 32 ns) up to _EXACT_LIMIT samples, else the normal approximation with the tie correction."""
    pooled = sorted([*a, *b])
    ranks = _midranks(pooled)
    doubled = [round(2 * ranks[value]) for value in b]  # midranks are halves: sums kept in integers
    observed, n, m = sum(doubled), len(a) + len(b), len(b)
    mean = m * (n + 1)  # doubled expectation of B's rank sum
    if n <= _EXACT_LIMIT:
        every = tuple(round(2 * ranks[value]) for value in pooled)
        counts = _subset_sums(every, m)
        total = sum(counts.values())
        extreme = sum(c for s, c in counts.items() if abs(s - mean) >= abs(observed - mean))
        return min(1.0, extreme / total)
    ties = sum(t**3 - t for t in _tie_sizes(pooled))
    variance = len(a) * m / 12 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0:
        return 1.0
    z = (abs(observed - mean) / 2 - 0.5) / math.sqrt(variance)  # continuity-corrected
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


def smallest_p(n: int, m: int) -> float:
    """The smallest two-sided p-value n and m distinct samples can give (all of one side first)."""
    return min(1.0, 2 / math.comb(n + m, n))


def samples_to_decide(alpha: float = ALPHA) -> int:
    """Samples a side below which no difference can be significant at `alpha` (5 at 0.01)."""
    n = 1
    while smallest_p(n, n) > alpha:
        n += 1
    return n


def duration_decision(
    a: Sequence[float],
    b: Sequence[float],
    threshold: float = THRESHOLD,
    alpha: float = ALPHA,
    cycles: tuple[Sequence[float], Sequence[float]] | None = None,
    clocks: tuple[float | None, float | None] = (None, None),
    size_threshold: float = SIZE_THRESHOLD,
) -> Decision:
    """A duration's verdict from its samples in A and B; with `clocks` (median SM frequencies) that
    differ, on `cycles` instead; with too few samples to test, by `size_threshold` alone."""
    what = "duration"
    if clocks_differ(*clocks):
        if cycles is None or not cycles[0] or not cycles[1]:
            return Decision(
                Verdict.AMBIGUOUS,
                f"the SM clocks differ ({_ghz(clocks[0])} in A, {_ghz(clocks[1])} in B) and no cycles were "
                "measured to compare instead",
            )
        a, b, what = cycles[0], cycles[1], f"cycles (the SM clocks differ: {_ghz(clocks[0])} / {_ghz(clocks[1])})"
    if not a or not b:
        return Decision(Verdict.AMBIGUOUS, "no samples on one side")
    if not statistics.median(a):
        return Decision(Verdict.AMBIGUOUS, f"the median {what} in A is 0")
    shift = shift_estimate(a, b)
    needed = samples_to_decide(alpha)
    if smallest_p(len(a), len(b)) > alpha:
        return _too_few(len(a), len(b), shift, what, (alpha, size_threshold, needed))
    p = mann_whitney_p(a, b)
    change = f"{what} {shift:+.1%} (median of the pairwise differences), p = {p:.2g}"
    if abs(shift) < threshold:
        return Decision(Verdict.SAME, f"{change}: within the {threshold:.0%} threshold", p, shift)
    if p <= alpha:
        verdict = Verdict.SLOWER if shift > 0 else Verdict.FASTER
        return Decision(verdict, f"{change}: beyond the {threshold:.0%} threshold and significant", p, shift)
    more = _samples_for(a, b, shift, alpha)
    return Decision(
        Verdict.AMBIGUOUS,
        f"{change}: beyond the threshold but not significant; about {more} samples a side would decide",
        p,
        shift,
        more,
    )


def _too_few(n: int, m: int, shift: float, what: str, rule: tuple[float, float, int]) -> Decision:
    """Too few samples for the rank test: SLOWER or FASTER by size alone beyond the size threshold,
    else AMBIGUOUS with the samples a side that would decide. `rule`: alpha, size threshold, needed."""
    alpha, size, needed = rule
    if abs(shift) >= size:
        few = f"{n} sample{'s' * (n != 1)} a side" if n == m else f"{n} and {m} samples"
        reason = f"{what} {shift:+.1%} (by size alone: {few}; at least {size:.0%} decides without a test)"
        return Decision(Verdict.SLOWER if shift > 0 else Verdict.FASTER, reason, shift=shift)
    return Decision(
        Verdict.AMBIGUOUS,
        f"{n} and {m} samples cannot show a difference at p <= {alpha:g} ({what} {shift:+.1%}, under the "
        f"{size:.0%} that decides by size alone); {needed} a side can",
        shift=shift,
        samples_needed=needed,
    )


def shift_estimate(a: Sequence[float], b: Sequence[float]) -> float:
    """B against A as a fraction of A's median: the Hodges-Lehmann estimate (the median of every
    difference b - a), which the rank test goes with. Steadier than the difference of two medians
    where durations come in 32 ns steps (1% of a 3 us kernel)."""
    return statistics.median(y - x for x in a for y in b) / statistics.median(a)


def exact_decision(metric: str, a: Sequence[object], b: Sequence[object]) -> Decision:
    """A near-deterministic value (grid, block, registers, instructions, bytes): SAME when every
    sample agrees, CHANGED otherwise."""
    left, right = sorted({str(v) for v in a}), sorted({str(v) for v in b})
    if left == right:
        return Decision(Verdict.SAME, f"{metric} {', '.join(left) or '-'} in both")
    return Decision(Verdict.CHANGED, f"{metric} {', '.join(left) or '-'} in A, {', '.join(right) or '-'} in B")


def _samples_for(a: Sequence[float], b: Sequence[float], shift: float, alpha: float) -> int:
    """Samples a side for a rank test to see `shift` at `alpha` with 80% power, from the samples'
    relative spread (normal approximation, Mann-Whitney's efficiency 3/pi against the t test)."""
    spread = statistics.pstdev([*(x / statistics.median(a) for x in a), *(x / statistics.median(b) for x in b)])
    z_alpha, z_power = _z(1 - alpha / 2), _z(0.8)
    n = 2 * ((z_alpha + z_power) * spread / abs(shift)) ** 2 / (3 / math.pi)
    return max(samples_to_decide(alpha), math.ceil(n), len(a) + 1)


def _z(quantile: float) -> float:
    return statistics.NormalDist().inv_cdf(quantile)


def clocks_differ(a: float | None, b: float | None) -> bool:
    return bool(a and b and abs(b - a) / a > CLOCK_TOLERANCE)


def _ghz(hertz: float | None) -> str:
    return f"{hertz / 1e9:.2f} GHz" if hertz else "unknown"


def _midranks(ordered: Sequence[float]) -> dict[float, float]:
    ranks: dict[float, float] = {}
    start = 0
    while start < len(ordered):
        end = start
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[start]:
            end += 1
        ranks[ordered[start]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def _tie_sizes(ordered: Sequence[float]) -> list[int]:
    sizes: dict[float, int] = {}
    for value in ordered:
        sizes[value] = sizes.get(value, 0) + 1
    return [size for size in sizes.values() if size > 1]


def _subset_sums(values: tuple[int, ...], size: int) -> dict[int, int]:
    """How many subsets of `size` of `values` (with repeats as distinct items) have each sum."""
    table: list[dict[int, int]] = [{0: 1}] + [{} for _ in range(size)]
    for value in values:
        for taken in range(size, 0, -1):
            for total, count in table[taken - 1].items():
                table[taken][total + value] = table[taken].get(total + value, 0) + count
    return table[size]


def pooled(runs: Sequence[Manifest]) -> Manifest:
    """The first run, each of its targets holding the results of that target in every run (indexed
    anew). A target is ok only where it was ok in every run; otherwise it keeps the first failure."""
    first = runs[0]
    targets = []
    for record in first.targets:
        same = [t for run in runs for t in run.targets if t.name == record.name]
        targets.append(_pooled_target(same))
    return first.model_copy(update={"targets": targets})


def _pooled_target(records: Sequence[TargetRecord]) -> TargetRecord:
    failed = next((r for r in records if r.status != Status.OK), None)
    results = [r.model_copy(update={"index": i}) for i, r in enumerate(x for t in records for x in t.results)]
    base = failed if failed is not None else records[0]
    return base.model_copy(update={"results": results if failed is None else []})
