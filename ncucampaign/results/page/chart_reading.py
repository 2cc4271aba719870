"""Reading the charts' data from a report's result (ncu_report's IAction): the tensor paths a kernel
used, and the PM-sampling timelines (one instance a sample, timestamps as correlation IDs)."""

from __future__ import annotations

import math
from typing import Any

from ncucampaign.results.page.chart_metrics import TENSOR, pm_series_of

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
