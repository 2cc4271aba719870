"""A finished target's results as manifest records: the report's metric values (ncu_report), and which process
each came from (ncu's console, or its CSV import when several ran). `NcuReportReader` reads reports for execute/;
`report_run` reads a report someone sent as a run of one target."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter

from ncucampaign import __version__
from ncucampaign.errors import NoReportReader, ReportUnreadable, UsageError
from ncucampaign.execute.attempt.classify import ConsoleSummary
from ncucampaign.execute.process.short import CAPTURE_LIMIT_BYTES, probe
from ncucampaign.execute.rundir.manifest import (
    CampaignInfo,
    GpuInfo,
    HostInfo,
    Manifest,
    NcuInfo,
    TargetRecord,
    ToolInfo,
)
from ncucampaign.execute.rundir.result_records import ProcessInfo, ResultRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.share.union import NO_CONFIG
from ncucampaign.results.reading.isolated import result_rows, warm_up
from ncucampaign.results.reading.runs import LoadedRun
from ncucampaign.spec.ncu_versions import REPORT_SUFFIXES

RESULT_RECORDS = TypeAdapter(list[ResultRecord])


def result_records(report: Path, wanted: tuple[str, ...], console: ConsoleSummary, ncu: str) -> list[ResultRecord]:
    """Raises NoReportReader without a reader, ReportUnreadable for a corrupt report."""
    rows = result_rows(report, wanted, ncu)
    processes = _processes(report, console, ncu, len(rows))
    return RESULT_RECORDS.validate_python([{**row, "process": processes.get(row["index"])} for row in rows])


def _processes(report: Path, console: ConsoleSummary, ncu: str, count: int) -> dict[int, ProcessInfo]:
    if len(console.connected) == 1:  # one process: every result is its
        pid, executable = console.connected[0]
        return dict.fromkeys(range(count), ProcessInfo(pid=pid, name=Path(executable).name))
    if not console.connected:
        return {}
    # a listing, not an answer: a report of thousands of results lists tens of megabytes
    text = probe([ncu, "--import", str(report), *NO_CONFIG, "--page", "raw", "--csv"], 120, limit=CAPTURE_LIMIT_BYTES)
    return parse_process_columns(text) if text else {}


def parse_process_columns(text: str) -> dict[int, ProcessInfo]:
    """Result ID -> process, from `ncu --import R --page raw --csv` (a header row, a units row, data)."""
    rows = list(csv.reader(io.StringIO(text)))
    start = next((i for i, row in enumerate(rows) if row[:3] == ["ID", "Process ID", "Process Name"]), None)
    if start is None:
        return {}
    found = {}
    for row in rows[start + 2 :]:
        if len(row) >= 3 and row[0].isdigit() and row[1].isdigit():
            found[int(row[0])] = ProcessInfo(pid=int(row[1]), name=row[2])
    return found


@dataclass(frozen=True)
class NcuReportReader:
    """The execution stage's ReportReader: results through ncu_report, in a worker process."""

    ncu: str

    def read(self, report: Path, wanted: tuple[str, ...], console: ConsoleSummary) -> list[ResultRecord] | None:
        """None without a reader: the manifest then says nothing rather than guess (results_from: console)."""
        try:
            return result_records(report, wanted, console, self.ncu)
        except NoReportReader:
            return None

    def warm(self) -> None:
        warm_up(self.ncu)


# A report someone sent (.ncu-rep, or .ncu-repz from ncu 2026.3), not made by a run: read as a run of one target,
# so that summarize, report and compare take it as they take a run directory (Nsight Compute's own baselines compare
# two reports of one kernel, before and after a change); the GPU is the one the report names.
DEVICE_NAME = "device__attribute_display_name"
TARGET = "report"  # two reports compared are one target's two sides


def is_bare_report(path: Path) -> bool:
    return path.suffix in REPORT_SUFFIXES


def report_record(path: Path, name: str | None = None, wanted: tuple[str, ...] = ()) -> TargetRecord:
    """The report as a target record of its own (named after the file, or `name`; `wanted`: metrics besides the
    standard ones)."""
    if not path.is_file():
        raise UsageError(f"{path}: no such report")
    results = result_records(path, wanted, ConsoleSummary(), "ncu")
    if not results:  # ncu writes no report when it profiled nothing
        raise ReportUnreadable(f"{path}: holds no results (empty, truncated, or not a report)")
    return TargetRecord(
        name=name or path.stem,
        target=name or path.stem,
        argv=[],
        shell_command="",
        env={},
        cwd="",
        timeout_s=0,
        retries=0,
        expected_results=None,
        status=Status.OK,
        results=results,
        log="",
        collects_sections=True,
    )


def report_run(path: Path) -> LoadedRun:
    """The report as a run whose targets are its kernels by identity (by_identity), its id the file's name: two
    reports are then compared kernel by kernel, as two runs are target by target (paired by place, a report's
    first result met the other's first, whatever kernels they were). What the report does not hold (the host, the
    times, the ncu that made it) is said to be not recorded, never taken from this machine."""
    record = report_record(path, TARGET, (DEVICE_NAME,))
    return LoadedRun(
        path,
        Manifest(
            tool=ToolInfo(version=__version__),
            run_id=path.name,
            state="finished",
            started_at="",
            ended_at="",
            command_line=[],
            campaign=CampaignInfo(name=path.stem, source=None, copy_path="", sha256=""),
            host=HostInfo(hostname=NOT_RECORDED, platform="", python=""),
            ncu=NcuInfo(path=NOT_RECORDED, version=None),
            gpus=_gpus(record.results),
            workload_git=None,
            targets=by_identity(record),
        ),
    )


NOT_RECORDED = "not recorded in the report"


def identity(result: ResultRecord) -> str:
    """A kernel launch's identity as a target's name: its function, launch configuration (CUDA's <<<grid, block>>>)
    and NVTX ranges, as a run's targets are (name, grid, block, NVTX)."""

    def dims(values: list[int] | None) -> str:
        return "(" + ",".join(str(v) for v in values) + ")" if values else "?"

    where = f" @{' | '.join(result.nvtx)}" if result.nvtx else ""
    return f"{result.kernel}<<<{dims(result.grid)},{dims(result.block)}>>>{where}"


def by_identity(record: TargetRecord) -> list[TargetRecord]:
    """One target per kernel identity, its results in the report's order (several launches of one identity are
    compared one by one)."""
    groups: dict[str, list[ResultRecord]] = {}
    for result in record.results:
        groups.setdefault(identity(result), []).append(result)
    return [
        record.model_copy(update={"name": name, "target": name, "results": results}) for name, results in groups.items()
    ]


def _gpus(results: list[ResultRecord]) -> list[GpuInfo] | None:
    names = [r.metrics[DEVICE_NAME].value for r in results if DEVICE_NAME in r.metrics]
    return [GpuInfo(index=0, name=str(names[0]), uuid="", driver_version="")] if names else None
