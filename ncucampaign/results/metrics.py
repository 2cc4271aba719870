"""The ncu metrics ncucampaign records for every result, their labels, and how tables show them (and
long kernel names, shortened in the middle)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ncucampaign.spec.ncu_catalog import DURATION

SM_THROUGHPUT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY_THROUGHPUT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
REGISTERS = "launch__registers_per_thread"
PASSES = "profiler__replayer_passes"
DEVICE_ID = "launch__device_id"
# What ncu's SpeedOfLight section shows as "SM Frequency": the clock a result was taken at.
SM_FREQUENCY = "gpc__cycles_elapsed.avg.per_second"
# SpeedOfLight's "Elapsed Cycles": what compare tests instead of durations where the clocks differ.
CYCLES = "gpc__cycles_elapsed.max"

# What every result records, when the report has it (missing metrics are absent, never zero).
STANDARD_METRICS: dict[str, str] = {
    DURATION: "duration",
    SM_THROUGHPUT: "SM throughput",
    MEMORY_THROUGHPUT: "memory throughput",
    OCCUPANCY: "achieved occupancy",
    REGISTERS: "registers/thread",
    PASSES: "replay passes",
    SM_FREQUENCY: "SM frequency",
    CYCLES: "elapsed cycles",
}


@dataclass(frozen=True)
class Column:
    """A standard metric as a table column: header, divisor (ns -> us) and digits."""

    metric: str
    header: str
    scale: float = 1.0
    digits: int = 1

    def format(self, value: float | None) -> str:
        return "" if value is None else f"{value / self.scale:.{self.digits}f}"


COLUMNS: tuple[Column, ...] = (
    Column(DURATION, "duration us", 1000.0, 2),
    Column(SM_THROUGHPUT, "SM %"),
    Column(MEMORY_THROUGHPUT, "memory %"),
    Column(OCCUPANCY, "occupancy %"),
    Column(REGISTERS, "registers", digits=0),
    Column(PASSES, "passes", digits=0),
)


KERNEL_WIDTH = 48  # longer kernel names are shortened in the middle (--wide, CSV and JSON show them whole)


def middle(text: str, width: int = KERNEL_WIDTH) -> str:
    """'cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128' at 48 ->
    'cudnn_generated_fort_native_s…_16x128x128', keeping both ends (family and tile shape)."""
    if len(text) <= width:
        return text
    head = (width - 1) * 3 // 5
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def apart(texts: Iterable[str], width: int) -> dict[str, str]:
    """Each text shortened in the middle to `width`, except that texts which would read alike drop the head they
    share instead: llama_train's three `nvjet_sm9…bz_TNT` targets read `…128x128_…bz_TNT`, `…256x64_6…bz_TNT`."""
    shown = {text: middle(text, width) for text in dict.fromkeys(texts)}
    alike: dict[str, list[str]] = {}
    for text, short in shown.items():
        alike.setdefault(short, []).append(text)
    for group in (group for group in alike.values() if len(group) > 1):
        common = next(
            (i for i, chars in enumerate(zip(*group, strict=False)) if len(set(chars)) > 1), min(map(len, group))
        )
        for text in group:  # as much of its tail as the width holds, however much of it is shared
            shown[text] = "…" + middle(text[min(common, max(len(text) - width + 1, 0)) :], width - 1)
    return shown
