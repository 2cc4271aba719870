"""A recorded value in its base unit, so that two runs compare what they measured, not how it was written (ncu's
`ns` and `us` or `nsecond`, `byte` and `Kbyte`, `hz` and `Mhz`). Non-finite values (a damaged manifest's NaN)
are no measurement. Pure."""

from __future__ import annotations

import math
import re

from ncucampaign.execute.rundir.result_records import ResultRecord

# Base units and how ncu (or a person) may spell them; a prefix scales them (metric, K/k = 1000).
_BASES = {"s": "second", "sec": "second", "second": "second", "byte": "byte", "b": "byte", "hz": "hz", "cycle": "cycle"}
_PREFIXES = {"n": 1e-9, "u": 1e-6, "µ": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_UNIT = re.compile(r"^(?P<prefix>[nuµmkKMGT]?)(?P<base>[A-Za-z]+)(?P<rest>(/.*)?)$")


def base_unit(unit: str) -> tuple[float, str]:
    """(factor, base unit) of a unit: ('us') -> (1e-6, 'second'); a unit it does not know as itself."""
    found = _UNIT.match(unit.strip())
    if found is not None:
        base = _BASES.get(found["base"].lower() if found["base"] != "B" else "b")
        prefix = found["prefix"]
        if base is not None and not (base == "hz" and prefix == "m"):  # 'mhz' is written for MHz
            return _PREFIXES[prefix], base + found["rest"]
        if base == "hz":
            return 1e6, "hz" + found["rest"]
    return 1.0, unit


def base_value(result: ResultRecord, metric: str) -> tuple[float, str] | None:
    """The metric's value in its base unit, and that unit; None when the result does not hold it as a finite number."""
    found = result.metrics.get(metric)
    if found is None or not isinstance(found.value, (int, float)) or isinstance(found.value, bool):
        return None
    if not math.isfinite(found.value):
        return None
    factor, unit = base_unit(found.unit)
    return found.value * factor, unit


def not_finite(result: ResultRecord, metric: str) -> bool:
    """The result holds the metric, as a number that is not finite."""
    found = result.metrics.get(metric)
    return found is not None and isinstance(found.value, float) and not math.isfinite(found.value)
