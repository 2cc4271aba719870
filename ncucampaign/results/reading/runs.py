"""Reading what runs measured: load a run's manifest, turn its results into a tidy table. Pure apart
from reading files."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ncucampaign.errors import EnvironmentProblem, ReportUnreadable, UsageError
from ncucampaign.execute.rundir.manifest import Manifest, TargetRecord
from ncucampaign.execute.rundir.reading import read_manifest
from ncucampaign.execute.rundir.result_records import ResultRecord
from ncucampaign.execute.rundir.store import LATEST, MANIFEST
from ncucampaign.results.reading.roofline import chart_data
from ncucampaign.results.weights import shares_by_kernel, weighed_as

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
    """A run as Python data (`ncucampaign.load_run`): its manifest's campaign, provenance and target
    records, and its results as one tidy table."""

    root: Path
    manifest: Manifest

    @property
    def targets(self) -> list[TargetRecord]:
        return self.manifest.targets

    def file(self, relative: str) -> Path:
        """A file the manifest names (a report, a log), where it is: inside the run directory, links followed. The
        manifest's model refuses a path that climbs out (`..`) or is absolute; a link inside that points out of the
        run (reports/x.ncu-rep -> /etc/passwd) is refused here: a reader opens nothing outside the run."""
        path = self.root.joinpath(*PurePosixPath(relative).parts)
        root = self.root.resolve()
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError):  # a link loop
            raise ReportUnreadable(f"{path}: a link that leads nowhere") from None
        if resolved != root and root not in resolved.parents:
            raise ReportUnreadable(f"{path}: leads outside the run directory (to {resolved}); not read")
        return path

    def rows(self) -> list[dict[str, object]]:
        """The tidy rows of `summarize --format csv|json`: one per result and metric, and one status row
        for each target without results."""
        return run_rows(self)

    def charts(self) -> list[dict[str, object]]:
        """Per result: its kernel's share of GPU time and the numbers the report's charts plot (roofline
        points and ceilings, memory-chart bytes, warp states); the same as `findings --format json`."""
        shares = shares_by_kernel(self.manifest)
        return [
            {"target": record.name, "result": result.index, "kernel": result.kernel,
             "gpu_time_share": shares.get(weighed_as(result)), **chart_data(result.value, result.metrics)}
            for record in self.manifest.targets
            for result in record.results
        ]  # fmt: skip

    def to_dataframe(self) -> Any:
        """The tidy rows as a pandas DataFrame (columns as `summarize --format csv`); needs pandas."""
        try:
            import pandas
        except ImportError:
            raise EnvironmentProblem(
                "to_dataframe needs pandas: pip install 'ncucampaign[dataframe]' (or pandas)"
            ) from None
        # Nullable dtypes: a status row leaves result, device and process_id empty, not float NaN.
        return pandas.DataFrame(self.rows(), columns=list(TIDY_COLUMNS)).convert_dtypes()


def where_runs_are(path: Path) -> str:
    """A hint for a run directory that is not there: the same path under a folder of the current
    directory that holds one (`runs/decode/latest` -> `campaigns/runs/decode/latest`), else where runs go."""
    if not path.exists() and not path.is_absolute() and ".." not in path.parts:
        found = [c for c in sorted(Path.cwd().glob(f"*/{path}")) if (c / MANIFEST).is_file() or (c / LATEST).is_dir()]
        if found:
            return f"; did you mean {found[0]}?"
    return "; runs go to runs/<campaign>/ beside the campaign file, or to its runs_dir:, or to run --out DIR"


def load_run(path: str | Path) -> LoadedRun:
    """A run directory, or a campaign's directory (its `latest` run), or a manifest.json."""
    candidate = Path(path)
    if candidate.is_file() and candidate.name == MANIFEST:
        candidate = candidate.parent
    if (candidate / LATEST).is_dir() and not (candidate / MANIFEST).exists():
        candidate = (candidate / LATEST).resolve()
    if not (candidate / MANIFEST).is_file():
        if (candidate / "plan.json").is_file():
            raise UsageError(
                f"{path}: a run stopped before it began (no {MANIFEST}): nothing ran in it, and a new run of the "
                "campaign removes it"
            )
        raise UsageError(f"{path}: not a run directory (no {MANIFEST}){where_runs_are(Path(path))}")
    return LoadedRun(candidate, read_manifest(candidate))


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
        found = tidy_rows(run.manifest.run_id, record.name, record.status.value, record.results)
        rows.extend(found or [status_row(run.manifest.run_id, record.name, record.status.value)])
    return rows


def status_row(run_id: str, target: str, status: str) -> dict[str, object]:
    """A target without results still has a row: its status (e.g. no_kernels, timed_out)."""
    return {**dict.fromkeys(TIDY_COLUMNS), "run_id": run_id, "target": target, "status": status}


def compared(run: LoadedRun) -> LoadedRun:
    """The run with only what a comparison reads of each target (its status, message, clocks and results): a run of
    20,000 targets held 416 MiB, 120 MiB of them its command lines, attempts and how each target was obtained, held
    while the second run was read."""
    for record in run.manifest.targets:
        record.argv, record.shell_command, record.env, record.attempts = [], "", {}, []
        record.obtained, record.report, record.diagnosis = None, None, []
    return run
