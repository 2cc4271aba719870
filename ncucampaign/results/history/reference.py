"""A baseline in git: one reference file per GPU model, made from runs and read back as compare's A side. Pure.

    reference: 1
    gpu: NVIDIA H200
    header: {campaign, campaign_sha256, ncu, driver, clock_control, runs, workload_commit}
    targets: {<name>: {launch, metrics: {<metric>: {unit, samples, median, tolerance | exact}}, gate, xfail}}

Deterministic (keys sorted, 5 significant figures, the newest MAX_SAMPLES samples), and `gate` and `xfail` are
kept from the file replaced."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ncucampaign.escaping import markdown_inline
from ncucampaign.execute.rundir.manifest import Manifest, TargetRecord
from ncucampaign.execute.rundir.result_records import MetricValue, ResultRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.results.gate.samples import EXACT_METRICS, launch_state
from ncucampaign.results.history.reference_file import (
    Reference,
    ReferenceHeader,
    ReferenceLaunch,
    ReferenceMetric,
    ReferenceTarget,
)

MAX_SAMPLES = 20
FIGURES = 5
FLOOR = 0.01  # the least tolerance: 1% of the median (a duration's noise on the H200: docs/ncu-behaviour.md)
SPREADS = 3.0  # the tolerance: at least this many robust spreads (1.4826 x the median absolute deviation)


def gpu_model(manifest: Manifest) -> str:
    return manifest.gpus[0].name if manifest.gpus else "unknown GPU"


def file_name(model: str) -> str:
    """refs/<model>.yaml: 'NVIDIA H200' -> 'NVIDIA-H200.yaml'; a model with no letter or digit (a
    manifest's '' or '...') is `unknown-GPU.yaml`, never the hidden `.yaml`."""
    stem = re.sub(r"[^A-Za-z0-9._]+", "-", model).strip("-.")
    return (stem if re.search(r"[A-Za-z0-9]", stem) else "unknown-GPU") + ".yaml"


def rounded(value: float) -> float | int:
    if value == 0 or not math.isfinite(value):
        return value
    digits = FIGURES - 1 - math.floor(math.log10(abs(value)))
    out = round(value, digits)
    return int(out) if float(out).is_integer() and abs(out) < 2**53 else out


def header(runs: Sequence[Manifest]) -> ReferenceHeader:
    newest = runs[-1]
    clocks = sorted({t.clock_control or "base" for run in runs for t in run.targets})
    commit = newest.workload_git
    return ReferenceHeader(
        campaign=newest.campaign.name,
        campaign_sha256=newest.campaign.sha256,
        ncu=newest.ncu.version,
        driver=newest.gpus[0].driver_version if newest.gpus else None,
        clock_control=",".join(clocks),
        runs=sorted(run.run_id for run in runs),
        workload_commit=(commit.commit + ("-dirty" if commit.dirty else "")) if commit else None,
    )


def reference_data(runs: Sequence[Manifest], previous: Reference | None) -> Reference:
    """The reference of `runs` (one campaign, one GPU model, oldest first): every target ok in every run,
    its results pooled as samples; `gate` and `xfail` kept from `previous`."""
    kept = previous.targets if previous is not None else {}
    targets: dict[str, ReferenceTarget] = {}
    sampled: set[str] = set()  # the runs some target's samples come from: the header names those alone
    for name in [t.name for t in runs[-1].targets]:
        records = [(run.run_id, t) for run in runs for t in run.targets if t.name == name]
        if not records or any(r.status != Status.OK for _, r in records):
            continue
        # The samples are compare's: results in one launch state, the newest run's first result's. A
        # target whose launches alternate (a GEMM regex in a range that holds two GEMMs) pooled whole
        # made a reference of two kernels that a fresh A/A run failed against (H200, 2026-12-02).
        state = launch_state(records[-1][1].results[0]) if records[-1][1].results else None
        found = [(run, r) for run, record in records for r in record.results if launch_state(r) == state]
        found = found[-MAX_SAMPLES:]
        if found:
            sampled |= {run for run, _ in found}
            own = kept.get(name)
            made = _target([r for _, r in found])
            targets[name] = made.model_copy(update={"gate": own.gate, "xfail": own.xfail}) if own else made
    named = [run for run in runs if run.run_id in sampled] or list(runs)
    return Reference(gpu=gpu_model(runs[-1]), header=header(named), targets=targets)


def of_one_setting(runs: Sequence[Manifest]) -> tuple[list[Manifest], list[str]]:
    """The runs made as the newest was (ncu version, driver, clock control), oldest first, and a note of each left
    out: a reference pools one setting's samples, as compare judges one (before: pooled under the newest run's
    header without a word, and mixed clock controls wrote `base,none`, which no run matches)."""
    newest = header([runs[-1]])
    same, notes = [], []
    for run in runs:
        made = header([run])
        differs = [
            f"{what} {getattr(made, key)}" for key, what in SETTING if getattr(made, key) != getattr(newest, key)
        ]
        if differs:
            notes.append(f"run {run.run_id} left out: made with {', '.join(differs)}, not as the newest run")
        else:
            same.append(run)
    return same, notes


SETTING = (("ncu", "ncu"), ("driver", "driver"), ("clock_control", "clock control"))


def left_out(runs: Sequence[Manifest]) -> tuple[list[str], dict[str, int]]:
    """Per target of the reference, the runs whose results were all left out of its samples: their launches were in
    another state than the newest run's first result (so one run's samples stood for five, and nothing said so); and
    how many runs each target's samples came from."""
    notes, taken = [], {}
    for name in [t.name for t in runs[-1].targets]:
        records = [(run.run_id, t) for run in runs for t in run.targets if t.name == name]
        if not records or any(r.status != Status.OK for _, r in records) or not records[-1][1].results:
            continue
        state = launch_state(records[-1][1].results[0])
        out = [run for run, r in records if r.results and all(launch_state(x) != state for x in r.results)]
        taken[name] = len(records) - len(out)
        if out:
            notes.append(
                f"{name}: {len(out)} of {len(records)} runs left out ({', '.join(out[:3])}{', ...' * (len(out) > 3)}): "
                "none of their results is in the launch state of the newest run's first (kernel, grid, block, NVTX)"
            )
    return notes, taken


def _target(results: Sequence[ResultRecord]) -> ReferenceTarget:
    first = results[0]
    launch = ReferenceLaunch(
        kernel=first.kernel, symbol=first.mangled, grid=first.grid, block=first.block, nvtx=list(first.nvtx)
    )
    metrics: dict[str, ReferenceMetric] = {}
    for metric in sorted({m for r in results for m in r.metrics}):
        found = [r.metrics[metric] for r in results if metric in r.metrics]
        values = [float(v.value) for v in found if isinstance(v.value, int | float) and math.isfinite(v.value)]
        if len(values) != len(results):  # a text value, or missing in some sample: not a series
            continue
        median = statistics.median(values)
        spread = 1.4826 * statistics.median(abs(v - median) for v in values)
        exact = metric in EXACT_METRICS
        metrics[metric] = ReferenceMetric(
            unit=found[0].unit,
            samples=[rounded(v) for v in values],
            median=rounded(median),
            exact=True if exact else None,
            tolerance=None if exact else rounded(max(FLOOR * abs(median), SPREADS * spread)),
        )
    return ReferenceTarget(launch=launch, metrics=metrics)


def as_manifest(reference: Reference, run: Manifest) -> Manifest:
    """The reference as a run of its own, `run` its template: each target ok, its samples its results."""
    by_name = {t.name: t for t in run.targets}
    targets = []
    for name, entry in sorted(reference.targets.items()):
        template = by_name.get(name) or run.targets[0]
        targets.append(_as_record(name, entry, template, reference.header.clock_control))
    return run.model_copy(update={"targets": targets, "run_id": "reference", "gpu_time": None})


def _as_record(name: str, entry: ReferenceTarget, template: TargetRecord, clock: str | None) -> TargetRecord:
    launch, metrics = entry.launch, entry.metrics
    count = max((len(m.samples) for m in metrics.values()), default=0)
    results = [
        ResultRecord(
            index=i,
            kernel=launch.kernel,
            demangled=launch.kernel,
            mangled=launch.symbol,
            workload="kernel",
            grid=launch.grid,
            block=launch.block,
            nvtx=launch.nvtx,
            metrics={k: MetricValue(value=m.samples[i], unit=m.unit) for k, m in metrics.items() if i < len(m.samples)},
        )
        for i in range(count)
    ]
    return template.model_copy(
        update={"name": name, "status": Status.OK, "results": results, "clock_control": clock, "message": ""}
    )


def not_comparable(reference: Reference, run: Manifest) -> str | None:
    """Why `run` cannot be judged against `reference` (another ncu, driver, clock setting or GPU)."""
    mine, theirs = header([run]), reference.header
    if reference.gpu != gpu_model(run):
        return f"the reference is of {reference.gpu}, the run of {gpu_model(run)}"
    for key, what in (("ncu", "ncu version"), ("driver", "driver"), ("clock_control", "clock control")):
        if getattr(theirs, key) != getattr(mine, key):
            return f"its {what} is {getattr(mine, key)}, the reference's {getattr(theirs, key)}"
    return None


@dataclass(frozen=True)
class Moved:
    target: str
    metric: str
    what: str  # LOWER, HIGHER, CHANGED, new, gone
    before: str
    after: str


def moved(previous: Reference | None, new: Reference) -> list[Moved]:
    """What changed from `previous` to `new`: medians beyond the previous tolerance, exact values that
    differ, targets and metrics new or gone."""
    old = previous.targets if previous is not None else {}
    found: list[Moved] = []
    for name in sorted({*old, *new.targets}):
        if name not in old or name not in new.targets:
            found.append(Moved(name, "-", "new" if name not in old else "gone", "", ""))
            continue
        before, after = old[name].metrics, new.targets[name].metrics
        for metric in sorted({*before, *after}):
            found += _metric_moved(name, metric, before.get(metric), after.get(metric))
    return found


def _metric_moved(name: str, metric: str, before: ReferenceMetric | None, after: ReferenceMetric | None) -> list[Moved]:
    if before is None or after is None:
        return [Moved(name, metric, "new" if after is not None else "gone", "", "")]
    old, now = before.median, after.median
    if old is None or now is None:
        return [Moved(name, metric, "new", "", str(now))]
    if after.exact:
        return [] if old == now else [Moved(name, metric, "CHANGED", str(old), str(now))]
    if abs(now - old) <= (before.tolerance or 0):
        return []
    return [Moved(name, metric, "HIGHER" if now > old else "LOWER", str(old), str(now))]


def moved_markdown(rows: Sequence[Moved]) -> str:
    """A pull request's table of what moved."""
    if not rows:
        return "Nothing moved beyond its tolerance.\n"
    lines = ["| target | metric | moved | before | after |", "|---|---|---|---|---|"]
    cell = markdown_inline
    lines += [f"| {cell(r.target)} | {cell(r.metric)} | {r.what} | {cell(r.before)} | {cell(r.after)} |" for r in rows]
    return "\n".join(lines) + "\n"
