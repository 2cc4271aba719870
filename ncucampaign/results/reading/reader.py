"""Read .ncu-rep reports with NVIDIA's `ncu_report` module, from the `ncu-report` wheel (`pip install
ncucampaign[reports]`) or ncu's `extras/python` folder; without either, callers fall back to ncu's console
output (one `==PROF== Profiling` line per result)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ncucampaign.errors import NoReportReader, ReportUnreadable
from ncucampaign.results.metrics import DEVICE_ID, STANDARD_METRICS
from ncucampaign.results.reading.charts import CHART_METRICS, pm_samples, used_tensor_paths
from ncucampaign.results.reading.report_reader import NO_READER, ncu_report_module
from ncucampaign.results.reading.rules import RuleResult, rule_fields
from ncucampaign.spec.ncu_catalog import DURATION
from ncucampaign.spec.ncu_grammar import DEFAULT_DOMAIN, compile_regex, split_regex


def load(report: Path, ncu: str | None = None) -> Any:
    """The report's IContext. NoReportReader without a reader, ReportUnreadable when the file is not one."""
    module = ncu_report_module(ncu)
    if module is None:
        raise NoReportReader(NO_READER)
    try:
        return module.load_report(str(report))
    except Exception as exc:  # ncu_report raises plain exceptions for unreadable files
        raise ReportUnreadable(f"{report}: not a readable report ({exc})") from None


@contextlib.contextmanager
def reading(report: Path) -> Iterator[None]:
    """A truncated or bit-flipped report loads, then answers None or raises where a value should be:
    whatever goes wrong while reading it is a ReportUnreadable naming the file."""
    try:
        yield
    except (ReportUnreadable, NoReportReader):
        raise
    except Exception as exc:
        raise ReportUnreadable(f"{report}: corrupt or truncated report ({type(exc).__name__}: {exc})") from None


def actions(context: Any) -> Iterator[tuple[int, int, Any]]:
    """(range index, action index, action) of every result, in report order."""
    for range_index in range(context.num_ranges()):
        profile_range = context.range_by_idx(range_index)
        for action_index in range(profile_range.num_actions()):
            yield range_index, action_index, profile_range.action_by_idx(action_index)


def name_of(action: Any, base: Any = None) -> str:
    name = action.name() if base is None else action.name(base)
    if not isinstance(name, str) or not name:
        raise ValueError("a result without a kernel name")
    return name


@dataclass(frozen=True)
class ReportedLaunch:
    """One result of a report, in report order."""

    ordinal: int
    function: str
    demangled: str
    duration_ns: float | None
    nvtx: tuple[str, ...]  # push/pop paths, one per domain: 'decode_step/layer/attention', 'D@a/b'
    device: int | None
    range_index: int
    action_index: int


def read_launches(report: Path, ncu: str | None = None) -> list[ReportedLaunch]:
    context = load(report, ncu)
    demangled_base = ncu_report_module(ncu).IAction.NameBase_DEMANGLED  # type: ignore[union-attr]
    launches: list[ReportedLaunch] = []
    with reading(report):
        for range_index, action_index, action in actions(context):
            duration = action.metric_by_name(DURATION)
            launches.append(
                ReportedLaunch(
                    ordinal=len(launches),
                    function=name_of(action),
                    demangled=name_of(action, demangled_base),
                    duration_ns=float(duration.as_double()) if duration is not None else None,
                    nvtx=_nvtx_paths(action),
                    device=_int_metric(action, DEVICE_ID),
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
        stack = "/".join(str(name) for name in domain.push_pop_ranges())
        if stack:
            name = str(domain.name())
            paths.append(stack if name == DEFAULT_DOMAIN else f"{name}@{stack}")
    return tuple(paths)


def nvtx_selected(report: Path, includes: list[str], ncu: str | None = None) -> set[tuple[int, int]]:
    """(range, action) pairs that ncu_report's own NVTX filter (ncu's grammar) selects."""
    context = load(report, ncu)
    with reading(report):
        return {
            (range_index, int(action_index))
            for range_index in range(context.num_ranges())
            for action_index in context.range_by_idx(range_index).actions_by_nvtx(includes, [])
        }


@dataclass(frozen=True)
class MeasuredResult:
    index: int
    kernel: str
    demangled: str
    mangled: str
    workload: str
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    device: int | None
    nvtx: tuple[str, ...]
    metrics: dict[str, tuple[float | int | str, str]]  # ncu metric name -> (value, unit)
    findings: tuple[dict[str, Any], ...] = ()  # ncu's rule results (rules.rule_fields)
    pm_samples: tuple[tuple[str, tuple[tuple[float, float], ...]], ...] = ()  # (label, ((ns, value), ...))


def read_results(report: Path, wanted: tuple[str, ...] = (), ncu: str | None = None) -> list[MeasuredResult]:
    """Every result with the standard metrics and the `wanted` ones (exact names or regex:)."""
    context = load(report, ncu)
    module: Any = ncu_report_module(ncu)
    kinds = {
        getattr(module.IAction, k): k.split("_", 1)[1].lower()
        for k in dir(module.IAction)
        if k.startswith("WorkloadType_")
    }
    exact = [name for name in wanted if not split_regex(name)[0]]
    compiled = [compile_regex(split_regex(name)[1])[0] for name in wanted if split_regex(name)[0]]
    patterns = [pattern for pattern in compiled if pattern is not None]
    results: list[MeasuredResult] = []
    with reading(report):
        for _, _, action in actions(context):
            names = [*STANDARD_METRICS, *CHART_METRICS, *exact]
            every = [str(n) for n in action.metric_names()]
            names += [n for n in every if any(p.search(n) for p in patterns)]
            results.append(
                MeasuredResult(
                    index=len(results),
                    kernel=name_of(action),
                    demangled=name_of(action, module.IAction.NameBase_DEMANGLED),
                    mangled=name_of(action, module.IAction.NameBase_MANGLED),
                    workload=kinds.get(action.workload_type(), str(action.workload_type())),
                    grid=_dims(action, "grid"),
                    block=_dims(action, "block"),
                    device=_int_metric(action, DEVICE_ID),
                    nvtx=_nvtx_paths(action),
                    metrics=_metrics(action, [*names, *used_tensor_paths(action, every)]),
                    findings=tuple(rule_fields(rule) for rule in action.rule_results_as_dicts()),
                    pm_samples=pm_samples(action, every),
                )
            )
    return results


def _metrics(action: Any, names: list[str]) -> dict[str, tuple[float | int | str, str]]:
    """Metric name -> (value, unit) for the names the result holds; missing or odd values are left out."""
    metrics = {}
    for name in dict.fromkeys(names):
        metric = action.metric_by_name(name)
        value = metric.value() if metric is not None else None
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            continue
        metrics[name] = (value, str(metric.unit() or ""))
    return metrics


def _int_metric(action: Any, name: str) -> int | None:
    metric = action.metric_by_name(name)
    return int(metric.as_uint64()) if metric is not None else None


def _dims(action: Any, what: str) -> tuple[int, int, int] | None:
    values = [_int_metric(action, f"launch__{what}_dim_{axis}") for axis in "xyz"]
    return None if None in values else (values[0], values[1], values[2])  # type: ignore[return-value]


def read_rule_results(report: Path, ncu: str | None = None) -> list[RuleResult]:
    context = load(report, ncu)
    found: list[RuleResult] = []
    with reading(report):
        for ordinal, (_, _, action) in enumerate(actions(context)):
            kernel = name_of(action)
            found.extend(RuleResult(ordinal, kernel, **rule_fields(rule)) for rule in action.rule_results_as_dicts())
    return found
