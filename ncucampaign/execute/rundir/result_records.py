"""The records of what a profiled result holds (its kernel, metrics, ncu's findings, PM samples), as
the manifest keeps them with each target (manifest.py)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Record(BaseModel):
    model_config = {"extra": "forbid"}


class MetricValue(Record):
    value: float | int | str
    unit: str


class ProcessInfo(Record):
    pid: int
    name: str


class FindingRecord(Record):
    """One of ncu's rule results for a result (what the details page shows under a section)."""

    rule: str = Field(description="rule identifier, e.g. SOLBottleneck")
    name: str
    section: str
    title: str
    message: str = Field(description="links written as their text, as ncu's details page prints them")
    type: str = Field(description="OPT, WARNING, ERROR, OK or NONE")
    estimated_speedup: float | None = Field(None, description="percent, when the rule estimates one")
    speedup_type: str | None = Field(None, description="global (kernel runtime) or local (hardware efficiency)")
    focus_metrics: list[str] = Field(default_factory=list)


class PmSeries(Record):
    """One metric sampled over the result's time (ncu's PM sampling)."""

    label: str
    samples: list[tuple[float, float]] = Field(description="(ns from the first sample, value)")


class ResultRecord(Record):
    """One profiled result (kernel, graph or range) with the report's own values."""

    index: int
    kernel: str = Field(description="function name")
    demangled: str
    mangled: str = Field("", description="the symbol: the one name ncu's console and its report reader spell alike")
    workload: str = Field(description="kernel, graph, range or cmdlist")
    grid: list[int] | None = None
    block: list[int] | None = None
    device: int | None = None
    process: ProcessInfo | None = Field(None, description="None when ncu's output does not tell")
    nvtx: list[str] = Field(default_factory=list, description="push/pop paths, 'Domain@' for non-default domains")
    metrics: dict[str, MetricValue] = Field(
        default_factory=dict, description="ncu metric name -> value and unit; missing metrics are absent"
    )
    findings: list[FindingRecord] = Field(default_factory=list, description="ncu's rule results for this result")
    pm_samples: list[PmSeries] = Field(default_factory=list, description="PM-sampling timelines, where collected")

    def value(self, metric: str) -> float | None:
        found = self.metrics.get(metric)
        return float(found.value) if found is not None and isinstance(found.value, (int, float)) else None
