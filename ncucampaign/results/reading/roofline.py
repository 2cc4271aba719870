"""A result's roofline, memory flows and warp states from its recorded metrics, formed as ncu's
own sections form them (results/reading/charts.py). Pure: numbers in, numbers out."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeGuard

from ncucampaign.results.reading.charts import (
    DRAM_HZ,
    DRAM_PEAK,
    DRAM_RATE,
    L2_BYTES_PER_CYCLE,
    L2_HZ,
    L2_PEAK,
    L2_RATE,
    MEMORY_FLOWS,
    PRECISIONS,
    SM_HZ,
    SMSP_HZ,
    STALL_REASONS,
    TENSOR,
    stall_label,
    stall_metric,
    thread_inst,
)

Value = Callable[[str], "float | None"]


@dataclass(frozen=True)
class RooflinePoint:
    """One precision's achieved work (FLOP/s, or OP/s for a tensor path) against the bytes it moved."""

    precision: str  # FP64, FP32, FP16, or 'Tensor <path>'
    work: float  # operations per second
    peak_work: float | None  # the precision's ceiling, operations per second
    dram_bytes_per_s: float | None
    l2_bytes_per_s: float | None

    @property
    def dram_intensity(self) -> float | None:
        return self.work / self.dram_bytes_per_s if self.dram_bytes_per_s and self.dram_bytes_per_s > 0 else None

    @property
    def l2_intensity(self) -> float | None:
        return self.work / self.l2_bytes_per_s if self.l2_bytes_per_s and self.l2_bytes_per_s > 0 else None


@dataclass(frozen=True)
class Roofline:
    dram_peak: float | None  # bytes per second
    l2_peak: float | None
    points: tuple[RooflinePoint, ...]

    def as_data(self) -> dict[str, object]:
        return {
            "dram_peak_bytes_per_s": self.dram_peak,
            "l2_peak_bytes_per_s": self.l2_peak,
            "points": [
                {
                    "precision": p.precision,
                    "work_per_s": p.work,
                    "peak_work_per_s": p.peak_work,
                    "dram_bytes_per_s": p.dram_bytes_per_s,
                    "l2_bytes_per_s": p.l2_bytes_per_s,
                    "dram_intensity": p.dram_intensity,
                    "l2_intensity": p.l2_intensity,
                }
                for p in self.points
            ],
        }


def _product(*values: float | None) -> float | None:
    result = 1.0
    for value in values:
        if value is None:
            return None
        result *= value
    return result


def _positive(value: float | None) -> TypeGuard[float]:
    """Only what a log scale can place: a manifest is data, and an edited one may hold anything."""
    return value is not None and 0 < value < float("inf")


def roofline_of(value: Value, names: Mapping[str, object]) -> Roofline | None:
    """`value(metric)`: a recorded metric (None when absent); `names`: every metric recorded (for the
    tensor paths). None when the result holds no roofline data (no SM frequency or no work counted)."""
    sm_hz, smsp_hz = value(SM_HZ), value(SMSP_HZ)
    dram, l2 = value(DRAM_RATE), _product(value(L2_RATE), L2_BYTES_PER_CYCLE)
    points = []
    for precision, (fma, per_fma, others) in PRECISIONS.items():
        per_cycle = [_product(value(thread_inst(fma, "per_cycle_elapsed")), per_fma)]
        per_cycle += [_product(value(thread_inst(op, "per_cycle_elapsed")), factor) for op, factor in others]
        known = [v for v in per_cycle if v is not None]
        work = _product(sum(known), smsp_hz) if known else None
        if _positive(work):
            peak = _product(value(thread_inst(fma, "peak_sustained")), per_fma, sm_hz)
            points.append(RooflinePoint(precision, work, peak, dram, l2))
    tensor = [m for name in sorted(names) if (m := TENSOR.match(name)) and m["what"] == "per_cycle_elapsed"]
    if any(m["path"].startswith("op_") for m in tensor):  # per instruction (CC 9.0 on): the sections' own
        tensor = [m for m in tensor if m["path"].startswith("op_")]
    for match in tensor:
        name = match.string
        work = _product(value(name), sm_hz)
        if _positive(work):
            peak = _product(value(name.replace(".per_cycle_elapsed", ".peak_sustained")), sm_hz)
            path = match["path"].removeprefix("op_").replace("_", " ")
            points.append(RooflinePoint(f"Tensor {path}", work, peak, dram, l2))
    if not points:
        return None
    return Roofline(
        dram_peak=_product(value(DRAM_PEAK), value(DRAM_HZ)),
        l2_peak=_product(value(L2_PEAK), L2_BYTES_PER_CYCLE, value(L2_HZ)),
        points=tuple(points),
    )


def memory_flows(value: Value) -> list[tuple[str, float]]:
    """(label, bytes) of the memory chart's links the result holds."""
    return [(label, found) for metric, label in MEMORY_FLOWS if (found := value(metric)) is not None]


def warp_states(value: Value) -> list[tuple[str, float]]:
    """(ncu's label, cycles a warp spends there per issued instruction), largest first."""
    found = [(stall_label(reason), v) for reason in STALL_REASONS if (v := value(stall_metric(reason))) is not None]
    return sorted(found, key=lambda item: -item[1])


def chart_data(value: Value, names: Mapping[str, object]) -> dict[str, object]:
    """A result's chart numbers as plain data (findings --format json, load_run's charts())."""
    roofline = roofline_of(value, names)
    return {
        "roofline": roofline.as_data() if roofline is not None else None,
        "memory_bytes": [{"link": label, "bytes": found} for label, found in memory_flows(value)],
        "warp_states": [{"state": label, "cycles_per_issue": found} for label, found in warp_states(value)],
    }
