"""A report someone sent (.ncu-rep, or .ncu-repz from ncu 2026.3), not made by a run: read as a run of one target,
so that summarize, report and compare take it as they take a run directory (Nsight Compute's own baselines compare
two reports of one kernel, before and after a change). Its results are matched by kernel, launch configuration and
order, as compare matches a run's; the GPU is the one the report names."""

from __future__ import annotations

import platform
import socket
import sys
from pathlib import Path

from ncucampaign import __version__
from ncucampaign.errors import ReportUnreadable, UsageError
from ncucampaign.execute.attempt.classify import ConsoleSummary
from ncucampaign.execute.rundir.manifest import (
    CampaignInfo,
    GpuInfo,
    HostInfo,
    Manifest,
    NcuInfo,
    TargetRecord,
    ToolInfo,
)
from ncucampaign.execute.rundir.result_records import ResultRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.results.reading.records import result_records
from ncucampaign.results.reading.runs import LoadedRun
from ncucampaign.spec.ncu_versions import REPORT_SUFFIXES

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
    )


def report_run(path: Path) -> LoadedRun:
    """The report as a run of one target (TARGET), its id the file's name."""
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
            host=HostInfo(hostname=socket.gethostname(), platform=platform.platform(), python=sys.version.split()[0]),
            ncu=NcuInfo(path="", version=None),
            gpus=_gpus(record.results),
            workload_git=None,
            targets=[record],
        ),
    )


def _gpus(results: list[ResultRecord]) -> list[GpuInfo] | None:
    names = [r.metrics[DEVICE_NAME].value for r in results if DEVICE_NAME in r.metrics]
    return [GpuInfo(index=0, name=str(names[0]), uuid="", driver_version="")] if names else None
