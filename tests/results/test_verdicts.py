"""The compare verdicts' decision rule on synthetic samples: durations drawn as the H200's
were (a 3 us kernel, 3.7% spread, multiples of 32 ns), each case over many seeds."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from ncucampaign.results.gate.verdicts import (
    Verdict,
    duration_decision,
    exact_decision,
    mann_whitney_p,
    samples_to_decide,
    smallest_p,
)

SEEDS = range(40)


def durations(seed: int, n: int, scale: float = 1.0, median_ns: float = 3000.0, spread: float = 0.037) -> list[float]:
    rng = random.Random(seed)
    return [round(rng.gauss(median_ns * scale, median_ns * spread) / 32) * 32 for _ in range(n)]


def verdicts(scale: float, n: int = 32) -> Counter[Verdict]:
    return Counter(duration_decision(durations(s, n), durations(1000 + s, n, scale)).verdict for s in SEEDS)


def brute_force_p(a: list[float], b: list[float]) -> float:
    """Every split of the pooled samples into groups of len(b), by the difference of mean ranks."""
    pooled = sorted([*a, *b])
    rank = {v: sum(i + 1 for i, x in enumerate(pooled) if x == v) / pooled.count(v) for v in pooled}
    ranks = [rank[v] for v in pooled]
    expected = len(b) * (len(pooled) + 1) / 2
    observed = abs(sum(rank[v] for v in b) - expected)
    splits = list(itertools.combinations(range(len(pooled)), len(b)))
    extreme = sum(1 for split in splits if abs(sum(ranks[i] for i in split) - expected) >= observed - 1e-9)
    return extreme / len(splits)


@pytest.mark.parametrize("seed", range(6))
def test_the_exact_rank_test_counts_every_split_of_tied_samples(seed: int) -> None:
    rng = random.Random(seed)
    a = [rng.choice([2976, 3008, 3040, 3072]) for _ in range(6)]
    b = [rng.choice([3008, 3040, 3072, 3104]) for _ in range(5)]
    assert mann_whitney_p(a, b) == pytest.approx(brute_force_p(a, b))


def test_the_normal_approximation_for_many_samples_agrees_with_the_exact_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pairs = [(durations(seed, 12), durations(100 + seed, 12, 1.03)) for seed in range(5)]
    exact = [mann_whitney_p(a, b) for a, b in pairs]
    monkeypatch.setattr("ncucampaign.results.gate.verdicts._EXACT_LIMIT", 0)
    approximate = [mann_whitney_p(a, b) for a, b in pairs]
    for p, q in zip(exact, approximate, strict=True):
        assert q == pytest.approx(p, rel=0.15, abs=0.005), (exact, approximate)


def test_identical_workloads_are_never_faster_or_slower() -> None:
    found = verdicts(1.0)
    assert found[Verdict.SLOWER] == found[Verdict.FASTER] == 0, found
    assert found[Verdict.SAME] >= 38, found


def test_a_one_percent_shift_is_mostly_the_same() -> None:
    found = verdicts(1.01)  # below the 3% threshold, though a real change: seen beyond it now and then
    assert found[Verdict.FASTER] == 0 and found[Verdict.SLOWER] <= 2 and found[Verdict.SAME] >= 36, found


def test_a_five_percent_slowdown_is_slower() -> None:
    found = verdicts(1.05)
    assert found[Verdict.FASTER] == 0 and found[Verdict.SLOWER] >= 38, found  # 95% of 40 at 32 samples


def test_a_twenty_percent_change_is_slower_or_faster_every_time() -> None:
    assert verdicts(1.20) == Counter({Verdict.SLOWER: len(SEEDS)})
    assert verdicts(1 / 1.20) == Counter({Verdict.FASTER: len(SEEDS)})


def test_one_sample_a_side_decides_by_size_alone_only_beyond_the_size_threshold() -> None:
    """Before the fix: one sample a side (no `samples:`) is what most campaigns give; a 50% slowdown passed."""
    slower = duration_decision([3000.0], [4500.0])  # +50%
    assert slower.verdict is Verdict.SLOWER and "by size alone: 1 sample a side" in slower.reason, slower
    assert duration_decision([4500.0], [3000.0]).verdict is Verdict.FASTER
    small = duration_decision([3008.0], [3610.0])  # +20%: noise can do that to one sample
    assert small.verdict is Verdict.AMBIGUOUS and small.samples_needed == samples_to_decide() == 5
    assert "1 and 1 samples cannot show a difference" in small.reason and "5 a side can" in small.reason
    assert duration_decision([3000.0], [3600.0], size_threshold=0.1).verdict is Verdict.SLOWER
    assert smallest_p(4, 4) > 0.01 >= smallest_p(5, 5)


def test_different_clocks_are_compared_in_cycles() -> None:
    cycles = durations(7, 32, median_ns=5940.0)  # the same work, the same cycles
    at_base, at_boost = 1.98e9, 1.5e9  # SM frequencies in A and B
    a = [c / at_base * 1e9 for c in cycles]
    b = [c / at_boost * 1e9 for c in durations(8, 32, median_ns=5940.0)]  # 32% longer at a lower clock
    assert duration_decision(a, b).verdict is Verdict.SLOWER  # what a duration-only gate would say
    decision = duration_decision(a, b, cycles=(cycles, durations(8, 32, median_ns=5940.0)), clocks=(at_base, at_boost))
    assert decision.verdict is Verdict.SAME and "cycles (the SM clocks differ: 1.98 GHz / 1.50 GHz)" in decision.reason
    without = duration_decision(a, b, clocks=(at_base, at_boost))
    assert without.verdict is Verdict.AMBIGUOUS and "no cycles were measured" in without.reason


def test_a_changed_launch_configuration_is_changed() -> None:
    assert exact_decision("grid", ["1024x1x1"] * 3, ["512x1x1"] * 3).verdict is Verdict.CHANGED
    assert "grid 1024x1x1 in A, 512x1x1 in B" in exact_decision("grid", ["1024x1x1"], ["512x1x1"]).reason
    assert exact_decision("registers", [32, 32], [32]).verdict is Verdict.SAME


def test_a_significant_shift_below_the_threshold_is_the_same() -> None:
    a = [3000.0 + i for i in range(10)]
    b = [3060.0 + i for i in range(10)]  # +2%, every sample of B above every sample of A
    decision = duration_decision(a, b)
    assert decision.p_value is not None and decision.p_value < 0.01 and decision.verdict is Verdict.SAME
