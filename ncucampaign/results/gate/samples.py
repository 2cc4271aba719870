"""compare's verdicts: per target in both runs, what its samples say. Pure. A target's samples are its results
in the launch state of its first (kernel, grid, block, NVTX stack); others are counted out. The duration is
judged by verdicts.py's rank test (on cycles where clocks differ); launch state and steady counters exactly."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ncucampaign.execute.rundir.manifest import TargetRecord
from ncucampaign.execute.rundir.result_records import ResultRecord
from ncucampaign.results.gate.verdicts import (
    ALPHA,
    SIZE_THRESHOLD,
    THRESHOLD,
    Decision,
    Verdict,
    duration_decision,
    exact_decision,
)
from ncucampaign.results.metrics import CYCLES, REGISTERS, SM_FREQUENCY
from ncucampaign.results.units import base_value, not_finite
from ncucampaign.spec.ncu_catalog import DURATION

# Near-deterministic: the same code on the same input does the same work (compared exactly).
EXACT_METRICS = (REGISTERS, "smsp__inst_executed.sum", "dram__bytes.sum", "lts__t_bytes.sum")


@dataclass(frozen=True)
class TargetVerdict:
    target: str
    metric: str
    verdict: Verdict
    reason: str
    samples: tuple[int, int]  # in A and in B
    p_value: float | None = None
    shift: float | None = None
    samples_needed: int | None = None


def target_verdicts(
    a: TargetRecord, b: TargetRecord, threshold: float = THRESHOLD, alpha: float = ALPHA, size: float = SIZE_THRESHOLD
) -> list[TargetVerdict]:
    """The verdicts of one target: its launch state, its duration, its near-deterministic values."""
    left, right = _samples(a.results), _samples(b.results)
    counts = (len(left), len(right))

    def verdict(metric: str, decision: Decision) -> TargetVerdict:
        return TargetVerdict(
            a.name, metric, decision.verdict, decision.reason, counts, decision.p_value, decision.shift,
            decision.samples_needed,
        )  # fmt: skip

    if not left or not right:
        return []
    found = []
    changed = launch_state(left[0]) != launch_state(right[0])
    if changed:
        found.append(verdict("launch", exact_decision("launch", [_state_text(left[0])], [_state_text(right[0])])))
    if not unit_mismatch(left, right, DURATION):
        # Still the target's time when its kernel changed (on the H200, cuBLAS chose another GEMM kernel
        # for a 60% wider weight, 34% slower: a gate that only said CHANGED passed it).
        decision = _with_left_out(_duration(left, right, threshold, alpha, size), left, right)
        if changed:
            decision = dataclasses.replace(decision, reason=f"{decision.reason} (its launch changed)")
        found.append(verdict(DURATION, decision))
    if changed:  # a different kernel's registers and counters differ by nature: the launch verdict says it
        return found
    for metric in EXACT_METRICS:
        values_a, values_b = _values(left, metric), _values(right, metric)
        if values_a and values_b:
            found.append(verdict(metric, exact_decision(metric, values_a, values_b)))
    return found


def duration_samples(record: TargetRecord) -> list[float]:
    """A target's durations in its first result's launch state (seconds): its samples."""
    return _values(_samples(record.results), DURATION)


def metric_samples(record: TargetRecord, metric: str) -> list[float]:
    """A target's values of `metric` in its first result's launch state (base unit): its samples."""
    return _values(_samples(record.results), metric)


def sample_summary(record: TargetRecord) -> str | None:
    """What `summarize` says of a target's samples (None with fewer than two): how many are in its
    first result's launch state, and their duration's median and spread."""
    samples = _samples(record.results)
    durations = sorted(_values(samples, DURATION))
    if len(durations) < 2:
        return None
    median = statistics.median(durations)
    if not median:
        return f"{record.name}: {len(durations)} samples; duration median 0"
    quartiles = statistics.quantiles(durations, n=4, method="inclusive")
    others = len(record.results) - len(samples)
    aside = f" ({others} in other launch states left out)" if others else ""
    us = 1e6  # the values are in seconds (results/units.py)
    return (
        f"{record.name}: {len(durations)} samples{aside}; duration median {median * us:.2f} us, "
        f"range {durations[0] * us:.2f}-{durations[-1] * us:.2f} us, "
        f"interquartile spread {(quartiles[2] - quartiles[0]) / median:.1%}"
    )


def short_samples(record: TargetRecord, asked: int) -> str | None:
    """When fewer than the `asked` samples share the first result's launch state (the samples compare decides on): how
    many, and how to pin them to that state or ask for enough (`run --samples 5` gave 3, and only summarize said so)."""
    samples = _samples(record.results)
    if asked < 2 or not samples or len(samples) >= asked:
        return None
    first, others = record.results[0], len(record.results) - len(samples)
    differ = [r for r in record.results if launch_state(r) != launch_state(first)]
    pins = []
    if any(r.kernel != first.kernel for r in differ):
        pins.append(f"kernel_name: {first.kernel}")
    if first.nvtx and any(tuple(r.nvtx) != tuple(first.nvtx) for r in differ):
        pins.append(f'nvtx_include: "[{first.nvtx[0]}]"')  # bottom and top of the stack: that stack alone
    more = math.ceil(asked * len(record.results) / len(samples))
    pinned = f"pin them to that state ({'; '.join(pins)}) or " if pins else ""
    return (
        f"{record.name}: {len(samples)} of {asked} samples in one launch state ({_state_text(first)}); {others} in "
        f"other launch states are left out of compare's verdicts: {pinned}ask for more (samples: {more})"
    )


def _duration(
    left: Sequence[ResultRecord], right: Sequence[ResultRecord], threshold: float, alpha: float, size: float
) -> Decision:
    clocks = [_values(side, SM_FREQUENCY) for side in (left, right)]
    return duration_decision(
        _values(left, DURATION),
        _values(right, DURATION),
        threshold,
        alpha,
        cycles=(_values(left, CYCLES), _values(right, CYCLES)),
        clocks=(
            statistics.median(clocks[0]) if clocks[0] else None,
            statistics.median(clocks[1]) if clocks[1] else None,
        ),
        size_threshold=size,
    )


def _samples(results: Sequence[ResultRecord]) -> list[ResultRecord]:
    return [r for r in results if launch_state(r) == launch_state(results[0])] if results else []


def launch_state(result: ResultRecord) -> tuple[object, ...]:
    """What makes results one target's samples: the same kernel, grid, block and NVTX stack."""
    return (result.kernel, tuple(result.grid or ()), tuple(result.block or ()), tuple(result.nvtx))


def _state_text(result: ResultRecord) -> str:
    grid = "x".join(map(str, result.grid or ())) or "-"
    block = "x".join(map(str, result.block or ())) or "-"
    return f"{result.kernel} grid {grid} block {block} NVTX {'; '.join(result.nvtx) or '-'}"


def _values(results: Sequence[ResultRecord], metric: str) -> list[float]:
    """The finite values, in their base unit (a duration in seconds, however it was written)."""
    return [found[0] for found in (base_value(r, metric) for r in results) if found is not None]


def _units(results: Sequence[ResultRecord], metric: str) -> set[str]:
    return {found[1] for found in (base_value(r, metric) for r in results) if found is not None}


def unit_mismatch(left: Sequence[ResultRecord], right: Sequence[ResultRecord], metric: str) -> str | None:
    """Why the two sides' values of `metric` cannot be compared: units that do not convert (None: they can)."""
    units_a, units_b = _units(left, metric), _units(right, metric)
    if len(units_a | units_b) <= 1:
        return None
    shown = {side: ", ".join(sorted(u for u in units)) for side, units in (("A", units_a), ("B", units_b))}
    return f"{metric} is in {shown['A'] or '-'} in A and {shown['B'] or '-'} in B: units that do not convert"


def _with_left_out(decision: Decision, left: Sequence[ResultRecord], right: Sequence[ResultRecord]) -> Decision:
    """The decision, saying which samples were no number (a NaN in an edited or damaged manifest)."""
    counts = [sum(not_finite(r, DURATION) for r in side) for side in (left, right)]
    if not any(counts):
        return decision
    told = " and ".join(f"{n} of {side}" for n, side in zip(counts, "AB", strict=True) if n)
    return dataclasses.replace(decision, reason=f"{decision.reason} ({told} left out: not a finite number)")
