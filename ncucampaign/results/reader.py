"""Read .ncu-rep reports with NVIDIA's `ncu_report` module.

The module comes from the optional `ncu-report` wheel (`pip install ncucampaign[reports]`) or, on
a machine with Nsight Compute installed, from ncu's own `extras/python` folder. Without either,
callers fall back to ncu's console output (one `==PROF== Profiling` line per result).
"""

from __future__ import annotations

import importlib
import re
import shutil
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from ncucampaign.results.metrics import DEVICE_ID, DURATION, STANDARD_METRICS
from ncucampaign.spec.ncu_grammar import split_regex


@cache
def ncu_report_module(ncu: str | None = None) -> ModuleType | None:
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    if ncu is None:
        return None
    found = shutil.which(ncu)
    if not found:
        return None
    for folder in list(Path(found).resolve().parents)[:4]:
        candidate = folder / "extras" / "python"
        if (candidate / "ncu_report.py").is_file():
            sys.path.append(str(candidate))
            try:
                return importlib.import_module("ncu_report")
            except Exception:  # a copy built for another Python: behave as if absent
                sys.path.remove(str(candidate))
                return None
    return None


def count_results(report: Path, ncu: str | None = None) -> int | None:
    """Number of results (profiled kernels, graphs or ranges) in a report; None when it cannot be read."""
    module = ncu_report_module(ncu)
    if module is None:
        return None
    try:
        context = module.load_report(str(report))
        return sum(context.range_by_idx(i).num_actions() for i in range(context.num_ranges()))
    except Exception:  # ncu_report raises plain exceptions for unreadable files
        return None


DEFAULT_DOMAIN = "<default domain>"


@dataclass(frozen=True)
class Launch:
    """One result of a report, in report order."""

    ordinal: int
    function: str
    demangled: str
    duration_ns: float | None
    nvtx: tuple[str, ...]  # push/pop paths, one per domain: 'decode_step/layer/attention', 'D@a/b'
    device: int | None
    range_index: int
    action_index: int


class ReportUnreadable(Exception):
    pass


def load(report: Path, ncu: str | None = None) -> Any:
    """The report's IContext; ReportUnreadable when there is no reader or the file cannot be read."""
    module = ncu_report_module(ncu)
    if module is None:
        raise ReportUnreadable("no report reader: pip install 'ncucampaign[reports]' (NVIDIA's ncu-report)")
    try:
        return module.load_report(str(report))
    except Exception as exc:
        raise ReportUnreadable(f"cannot read {report}: {exc}") from None


def read_launches(report: Path, ncu: str | None = None) -> list[Launch]:
    context = load(report, ncu)
    module = ncu_report_module(ncu)
    demangled_base = module.IAction.NameBase_DEMANGLED
    launches = []
    for range_index in range(context.num_ranges()):
        profile_range = context.range_by_idx(range_index)
        for action_index in range(profile_range.num_actions()):
            action = profile_range.action_by_idx(action_index)
            duration = action.metric_by_name(DURATION)
            device = action.metric_by_name(DEVICE_ID)
            launches.append(
                Launch(
                    ordinal=len(launches),
                    function=action.name(),
                    demangled=action.name(demangled_base),
                    duration_ns=duration.as_double() if duration is not None else None,
                    nvtx=_nvtx_paths(action),
                    device=int(device.as_uint64()) if device is not None else None,
                    range_index=range_index,
                    action_index=action_index,
                )
            )
    return launches


def _nvtx_paths(action: Any) -> tuple[str, ...]:
    state = action.nvtx_state()
    if state is None:
        return ()
    paths = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        stack = "/".join(domain.push_pop_ranges())
        if stack:
            name = domain.name()
            paths.append(stack if name == DEFAULT_DOMAIN else f"{name}@{stack}")
    return tuple(paths)


def nvtx_selected(report: Path, includes: list[str], ncu: str | None = None) -> set[tuple[int, int]]:
    """(range, action) pairs that ncu_report's own NVTX filter (ncu's grammar) selects."""
    context = load(report, ncu)
    return {
        (range_index, action_index)
        for range_index in range(context.num_ranges())
        for action_index in context.range_by_idx(range_index).actions_by_nvtx(includes, [])
    }


@dataclass(frozen=True)
class MeasuredResult:
    index: int
    kernel: str
    demangled: str
    workload: str
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    device: int | None
    nvtx: tuple[str, ...]
    metrics: dict[str, tuple[float | int | str, str]]  # ncu metric name -> (value, unit)


def read_results(report: Path, wanted: tuple[str, ...] = (), ncu: str | None = None) -> list[MeasuredResult]:
    """Every result with the standard metrics and the `wanted` ones (exact names or regex:)."""
    context = load(report, ncu)
    module = ncu_report_module(ncu)
    kinds = {
        getattr(module.IAction, k): k.split("_", 1)[1].lower()
        for k in dir(module.IAction)
        if k.startswith("WorkloadType_")
    }
    exact = [name for name in wanted if not split_regex(name)[0]]
    patterns = [re.compile(split_regex(name)[1]) for name in wanted if split_regex(name)[0]]
    results = []
    for range_index in range(context.num_ranges()):
        profile_range = context.range_by_idx(range_index)
        for action_index in range(profile_range.num_actions()):
            action = profile_range.action_by_idx(action_index)
            names = [*STANDARD_METRICS, *exact]
            if patterns:
                names += [n for n in action.metric_names() if any(p.search(n) for p in patterns)]
            metrics = {}
            for name in dict.fromkeys(names):
                metric = action.metric_by_name(name)
                if metric is not None and (value := metric.value()) is not None:
                    metrics[name] = (value, metric.unit())
            results.append(
                MeasuredResult(
                    index=len(results),
                    kernel=action.name(),
                    demangled=action.name(module.IAction.NameBase_DEMANGLED),
                    workload=kinds.get(action.workload_type(), str(action.workload_type())),
                    grid=_dims(action, "grid"),
                    block=_dims(action, "block"),
                    device=_int_metric(action, DEVICE_ID),
                    nvtx=_nvtx_paths(action),
                    metrics=metrics,
                )
            )
    return results


def _int_metric(action: Any, name: str) -> int | None:
    metric = action.metric_by_name(name)
    return int(metric.as_uint64()) if metric is not None else None


def _dims(action: Any, what: str) -> tuple[int, int, int] | None:
    values = [_int_metric(action, f"launch__{what}_dim_{axis}") for axis in "xyz"]
    return None if None in values else (values[0], values[1], values[2])  # type: ignore[return-value]
