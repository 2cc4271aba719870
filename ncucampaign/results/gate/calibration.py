"""An A/A calibration (`ab FILE` without --a/--b): the campaign run against itself, so that every
verdict but SAME or AMBIGUOUS is a false one, and what its samples can tell apart. Pure."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from ncucampaign.execute.rundir.manifest import Manifest
from ncucampaign.results.gate.compare import Comparison
from ncucampaign.results.gate.samples import duration_samples
from ncucampaign.results.gate.verdicts import ALPHA, SIZE_THRESHOLD, Verdict, samples_to_decide
from ncucampaign.spec.ncu_catalog import DURATION


@dataclass(frozen=True)
class CalibrationRow:
    target: str
    samples: tuple[int, int]
    spread: float | None  # the samples' relative standard deviation (both sides pooled)
    verdict: str  # the duration's verdict: anything but SAME and AMBIGUOUS is a false one
    detectable: str  # the smallest shift its samples show, or how it is decided

    @property
    def false(self) -> bool:
        return self.verdict in (Verdict.SLOWER.value, Verdict.FASTER.value, Verdict.CHANGED.value)


def detectable_shift(n: int, spread: float, alpha: float = ALPHA) -> float:
    """The smallest shift a rank test on `n` samples a side finds at `alpha` with 80% power, for
    samples of this relative spread (normal approximation, Mann-Whitney's efficiency 3/pi)."""
    z = statistics.NormalDist().inv_cdf
    return (z(1 - alpha / 2) + z(0.8)) * spread * math.sqrt(2 / (n * 3 / math.pi))


def calibration(a: Manifest, b: Manifest, comparison: Comparison, size: float = SIZE_THRESHOLD) -> list[CalibrationRow]:
    """Per target of both runs: its samples, their spread, its verdict and what it could detect."""
    verdicts = {v.target: v for v in comparison.verdicts if v.metric == DURATION}
    by_name = {t.name: t for t in b.targets}
    rows = []
    for target in a.targets:
        other, verdict = by_name.get(target.name), verdicts.get(target.name)
        if other is None or verdict is None:
            continue
        left, right = duration_samples(target), duration_samples(other)
        pooled = [
            x / statistics.median(side) for side in (left, right) if side and statistics.median(side) for x in side
        ]
        spread = statistics.pstdev(pooled) if len(pooled) > 1 else None
        n = min(len(left), len(right))
        if n < samples_to_decide():
            detectable = f"{size:.0%} (by size alone: {samples_to_decide()} a side would test)"
        elif spread is None:
            detectable = "-"
        else:
            detectable = f"{detectable_shift(n, spread):.1%}"
        rows.append(CalibrationRow(target.name, (len(left), len(right)), spread, verdict.verdict.value, detectable))
    return rows
