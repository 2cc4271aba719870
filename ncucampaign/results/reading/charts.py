"""The ncu metrics the report's charts are drawn from (roofline, memory chart, warp states), with names and
formulas from ncu 2025.3.1's section files (docs/ncu-behaviour.md, "Charts"), and what a result's IAction says
of tensor paths and PM-sampling timelines (one instance a sample, timestamps as correlation IDs)."""

from __future__ import annotations

import math
import re
from typing import Any

SM_HZ = "sm__cycles_elapsed.avg.per_second"  # "SM Frequency" of the peaks
SMSP_HZ = "smsp__cycles_elapsed.avg.per_second"  # "SM Frequency" of the achieved values
DRAM_PEAK = "dram__bytes.sum.peak_sustained"  # bytes/cycle
DRAM_HZ = "dram__cycles_elapsed.avg.per_second"
DRAM_RATE = "dram__bytes.sum.per_second"
L2_PEAK = "lts__lts2xbar_cycles_active.sum.peak_sustained"  # x 32 bytes a cycle (derived__lts__lts2xbar_bytes)
L2_HZ = "lts__cycles_elapsed.avg.per_second"
L2_RATE = "lts__lts2xbar_cycles_active.sum.per_second"  # x 32 bytes
L2_BYTES_PER_CYCLE = 32


def thread_inst(op: str, what: str) -> str:
    """A thread-instruction metric of the roofline sections (peaks per SM, achieved per SMSP)."""
    unit = "sm" if what == "peak_sustained" else "smsp"
    return f"{unit}__sass_thread_inst_executed_op_{op}_pred_on.sum.{what}"


# Precision -> (FMA op, its operations per instruction, the other ops counted with their factor).
# FP16: half2 instructions, so HADD/HMUL count 2 operations and HFMA 4 (the Half Precision chart).
PRECISIONS: dict[str, tuple[str, int, tuple[tuple[str, int], ...]]] = {
    "FP64": ("dfma", 2, (("dadd", 1), ("dmul", 1))),
    "FP32": ("ffma", 2, (("fadd", 1), ("fmul", 1))),
    "FP16": ("hfma", 4, (("hadd", 2), ("hmul", 2))),
}

# sm__ops_path_tensor_[op_<op>_]src_<types>.sum.{per_cycle_elapsed,peak_sustained}: one per tensor path.
TENSOR = re.compile(
    r"^sm__ops_path_tensor_(?P<path>(?:op_)?[a-z0-9_]+)\.sum\.(?P<what>per_cycle_elapsed|peak_sustained)$"
)

MEMORY_FLOWS: tuple[tuple[str, str], ...] = (
    ("l1tex__m_xbar2l1tex_read_bytes.sum", "L2 → L1/TEX (reads)"),
    ("l1tex__m_l1tex2xbar_write_bytes.sum", "L1/TEX → L2 (writes)"),
    ("dram__bytes_read.sum", "DRAM → L2 (reads)"),
    ("dram__bytes_write.sum", "L2 → DRAM (writes)"),
)

STALL_REASONS = (
    "long_scoreboard", "wait", "no_instruction", "selected", "math_pipe_throttle", "imc_miss",
    "branch_resolving", "short_scoreboard", "gmma", "not_selected", "dispatch_stall", "barrier",
    "drain", "misc", "lg_throttle", "membar", "mio_throttle", "sleeping", "tex_throttle",
)  # fmt: skip


def stall_metric(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


def stall_label(reason: str) -> str:
    """ncu's own label ("Stall Long Scoreboard"; "Selected" is not a stall)."""
    words = {"imc": "IMC", "lg": "LG", "mio": "MIO", "gmma": "GMMA"}
    text = " ".join(words.get(word, word.capitalize()) for word in reason.split("_"))
    return text if reason == "selected" else f"Stall {text}"


# PM sampling (section PmSampling): metrics sampled over time, one instance a sample, each with its
# timestamp in ns (the instance's correlation ID); named <unit group>.<pass group>.<metric>.
PM_SERIES: tuple[tuple[str, str], ...] = (
    ("sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed", "SM instructions %"),
    ("sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed", "tensor pipe %"),
    ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 throughput %"),
    ("dramc__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput %"),
)


def pm_series_of(name: str) -> str | None:
    """The label of a PM-sampling metric the report charts (None for any other metric)."""
    return next((label for suffix, label in PM_SERIES if name.endswith("." + suffix)), None)


CHART_METRICS: tuple[str, ...] = (
    SM_HZ, SMSP_HZ, DRAM_PEAK, DRAM_HZ, DRAM_RATE, L2_PEAK, L2_HZ, L2_RATE,
    *(
        name
        for fma, _, others in PRECISIONS.values()
        for name in (thread_inst(fma, "peak_sustained"), thread_inst(fma, "per_cycle_elapsed"),
                     *(thread_inst(op, "per_cycle_elapsed") for op, _ in others))
    ),
    *(metric for metric, _ in MEMORY_FLOWS),
    *(stall_metric(reason) for reason in STALL_REASONS),
)  # fmt: skip


MAX_PM_SAMPLES = 2000  # per series: the chart is a few hundred pixels wide


def pm_samples(action: Any, names: list[str]) -> tuple[tuple[str, tuple[tuple[float, float], ...]], ...]:
    """The PM-sampling series the report charts, as (time in ns from the first sample, value)."""
    found = []
    for name in names:
        label = pm_series_of(name)
        metric = action.metric_by_name(name) if label is not None else None
        if label is None or metric is None or not metric.has_correlation_ids() or metric.num_instances() < 2:
            continue
        stamps, count = metric.correlation_ids(), min(metric.num_instances(), MAX_PM_SAMPLES)
        pairs = [(float(stamps.as_uint64(i)), float(metric.as_double(i))) for i in range(count)]
        pairs = [(t, v) for t, v in pairs if t > 0 and math.isfinite(v)]  # the first instance has no time
        if len(pairs) >= 2:
            start = pairs[0][0]
            found.append((label, tuple((t - start, v) for t, v in pairs)))
    return tuple(found)


def used_tensor_paths(action: Any, names: list[str]) -> list[str]:
    """A report holds every tensor path of the architecture (some thirty on an H200), nearly all idle:
    only the paths a kernel used, and their peaks, are worth recording."""
    used = []
    for name in names:
        match = TENSOR.match(name)
        metric = action.metric_by_name(name) if match and match["what"] == "per_cycle_elapsed" else None
        value = metric.value() if metric is not None else None
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            used += [name, name.replace(".per_cycle_elapsed", ".peak_sustained")]
    return used
