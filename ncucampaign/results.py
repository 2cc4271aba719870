"""Reading what runs measured: load a run's manifest, turn results into a tidy table, compare two
runs. Pure apart from reading files."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ncucampaign.classify import Status
from ncucampaign.errors import UsageError
from ncucampaign.manifest import MANIFEST_VERSION, Manifest, ResultRecord
from ncucampaign.reports import STANDARD_METRICS

DURATION = "gpu__time_duration.sum"
TIDY_COLUMNS = (
    "run_id",
    "target",
    "status",
    "result",
    "kernel",
    "demangled",
    "device",
    "process_id",
    "nvtx",
    "metric",
    "value",
    "unit",
)


@dataclass(frozen=True)
class LoadedRun:
    root: Path
    manifest: Manifest


def load_run(path: str | Path) -> LoadedRun:
    """A run directory, or a campaign's directory (its `latest` run), or a manifest.json."""
    candidate = Path(path)
    if candidate.is_file() and candidate.name == "manifest.json":
        candidate = candidate.parent
    if (candidate / "latest").is_dir() and not (candidate / "manifest.json").exists():
        candidate = (candidate / "latest").resolve()
    manifest_file = candidate / "manifest.json"
    if not manifest_file.is_file():
        raise UsageError(f"{path}: not a run directory (no manifest.json)")
    try:
        data = json.loads(manifest_file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"{manifest_file}: unreadable manifest: {exc}") from None
    version = data.get("manifest_version") if isinstance(data, dict) else None
    if version != MANIFEST_VERSION:
        raise UsageError(f"{manifest_file}: manifest_version {version!r}; this ncucampaign reads {MANIFEST_VERSION}")
    try:
        return LoadedRun(candidate, Manifest.model_validate(data))
    except ValidationError as exc:
        raise UsageError(f"{manifest_file}: not a valid manifest: {exc.errors()[0]['msg']}") from None


def tidy_rows(run_id: str, target: str, status: str, results: Iterable[ResultRecord]) -> list[dict[str, object]]:
    """One row per result and metric, with stable column names and ncu's own units."""
    rows = []
    for result in results:
        for metric, measured in result.metrics.items():
            rows.append(
                {
                    "run_id": run_id,
                    "target": target,
                    "status": status,
                    "result": result.index,
                    "kernel": result.kernel,
                    "demangled": result.demangled,
                    "device": result.device,
                    "process_id": result.process.pid if result.process else None,
                    "nvtx": ";".join(result.nvtx),
                    "metric": metric,
                    "value": measured.value,
                    "unit": measured.unit,
                }
            )
    return rows


def run_rows(run: LoadedRun) -> list[dict[str, object]]:
    rows = []
    for record in run.manifest.targets:
        rows.extend(tidy_rows(run.manifest.run_id, record.name, record.status.value, record.results))
    return rows


# --- compare -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    target: str
    result: int
    kernel: str
    metric: str
    unit: str
    before: float
    after: float
    relative: float | None  # (after - before) / before; None when before is 0
    flagged: bool  # beyond the threshold, either way
    regression: bool  # a duration that grew beyond the threshold


@dataclass(frozen=True)
class Comparison:
    changes: tuple[Change, ...]
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    notes: tuple[str, ...]  # environment differences and unmatched results

    @property
    def regressions(self) -> tuple[Change, ...]:
        return tuple(change for change in self.changes if change.regression)


def compare_runs(a: Manifest, b: Manifest, threshold: float = 0.1, metrics: Sequence[str] = ()) -> Comparison:
    """Targets matched by name, results by order; `metrics` adds to the standard ones."""
    notes = list(_environment_notes(a, b))
    by_name_b = {target.name: target for target in b.targets}
    names_a = [target.name for target in a.targets]
    changes = []
    for target_a in a.targets:
        target_b = by_name_b.get(target_a.name)
        if target_b is None:
            continue
        for status, run in ((target_a.status, "A"), (target_b.status, "B")):
            if status != Status.OK:
                notes.append(f"{target_a.name}: {status.value} in run {run}")
        if len(target_a.results) != len(target_b.results):
            notes.append(
                f"{target_a.name}: {len(target_a.results)} results in A, {len(target_b.results)} in B; "
                "only the first ones are compared"
            )
        for result_a, result_b in zip(target_a.results, target_b.results, strict=False):
            if result_a.kernel != result_b.kernel:
                notes.append(
                    f"{target_a.name}[{result_a.index}]: kernel {result_a.kernel} in A, {result_b.kernel} in B"
                )
            wanted = dict.fromkeys([*STANDARD_METRICS, *metrics])
            for metric in wanted:
                before, after = result_a.value(metric), result_b.value(metric)
                if before is None or after is None:
                    continue
                relative = (after - before) / before if before else None
                flagged = relative is not None and abs(relative) > threshold
                changes.append(
                    Change(
                        target=target_a.name,
                        result=result_a.index,
                        kernel=result_a.kernel,
                        metric=metric,
                        unit=result_a.metrics[metric].unit,
                        before=before,
                        after=after,
                        relative=relative,
                        flagged=flagged,
                        regression=flagged and metric == DURATION and after > before,
                    )
                )
    return Comparison(
        changes=tuple(changes),
        only_in_a=tuple(name for name in names_a if name not in by_name_b),
        only_in_b=tuple(target.name for target in b.targets if target.name not in set(names_a)),
        notes=tuple(notes),
    )


def _environment_notes(a: Manifest, b: Manifest) -> Iterable[str]:
    def gpus(manifest: Manifest) -> str:
        return ", ".join(sorted({g.name for g in manifest.gpus or []})) or "unknown"

    def drivers(manifest: Manifest) -> str:
        return ", ".join(sorted({g.driver_version for g in manifest.gpus or []})) or "unknown"

    for what, left, right in (
        ("GPU", gpus(a), gpus(b)),
        ("driver", drivers(a), drivers(b)),
        ("ncu version", a.ncu.version or "unknown", b.ncu.version or "unknown"),
    ):
        if left != right:
            yield f"warning: the {what} differs: {left} in A, {right} in B; numbers may not be comparable"
