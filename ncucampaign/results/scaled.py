"""A recorded value as people read it: three significant digits and a prefixed unit (3.18 GHz,
1.27 TB/s, 12.7 us) instead of ncu's `3180199430.19943 hz`. For tables only: CSV, JSON and
`to_dataframe()` keep the value and unit as recorded. Pure."""

from __future__ import annotations

import math

from ncucampaign.results.units import base_unit

# Per base unit: (factor, written unit) from the largest down; a value takes the first it reaches.
_LADDERS: dict[str, tuple[tuple[float, str], ...]] = {
    "second": ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")),
    "byte": ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB"), (1.0, "B")),
    "byte/second": ((1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "KB/s"), (1.0, "B/s")),
    "hz": ((1e9, "GHz"), (1e6, "MHz"), (1e3, "kHz"), (1.0, "Hz")),
}
# Any other unit (inst, cycle, sector, warp, a ratio): large counts get a metric prefix of their own.
_COUNTS = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"))


def significant(value: float) -> str:
    """Three significant digits, without an exponent: 3.18, 12.7, 127, 1270, 0.0123."""
    value = float(f"{value:.3g}")  # rounded first: 9.996 is 10.0, not 10.00
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 1:
        return f"{value:.{2 - math.floor(math.log10(magnitude))}f}"
    return f"{value:.3g}"


def scaled(value: float | int | str, unit: str) -> str:
    """The value with the unit prefix that makes it readable; text values as recorded."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{value} {unit}".strip()
    if not math.isfinite(value):
        return f"{value} {unit}".strip()
    factor, base = base_unit(unit)
    ladder = _LADDERS.get(base.replace("/s", "/second", 1) if base.endswith("/s") else base)
    if ladder is not None:
        absolute = abs(value * factor)
        for step, written in ladder:
            if absolute >= step or step == ladder[-1][0]:
                return f"{significant(value * factor / step)} {written}"
    if unit == "%":
        return f"{significant(value)} %"
    for step, prefix in _COUNTS:
        if abs(value) >= step:
            return f"{significant(value / step)}{prefix} {unit}".strip()
    return f"{significant(value)} {unit}".strip()
