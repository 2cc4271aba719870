"""A manifest built in code, for tests of what reads manifests."""

from __future__ import annotations

from typing import Any

from ncucampaign.execute.rundir.manifest import (
    CampaignInfo,
    GpuInfo,
    HostInfo,
    Manifest,
    NcuInfo,
    TargetRecord,
    ToolInfo,
)
from ncucampaign.execute.rundir.status import Status


def manifest_with(targets: list[TargetRecord], gpu: str = "NVIDIA H200", ncu: str = "2025.3.1.0") -> Manifest:
    return Manifest(
        tool=ToolInfo(version="0"),
        run_id="r",
        state="finished",
        started_at="2026-01-01T00:00:00+00:00",
        command_line=["ncucampaign"],
        campaign=CampaignInfo(name="c", source=None, copy_path="campaign.yaml", sha256="0" * 64),
        host=HostInfo(hostname="h", platform="p", python="3"),
        ncu=NcuInfo(path="ncu", version=ncu),
        gpus=[GpuInfo(index=0, name=gpu, uuid="GPU-0", driver_version="580")],
        workload_git=None,
        targets=targets,
    )


def target_record(name: str, status: Status = Status.OK, **fields: Any) -> TargetRecord:
    """A target record with only what a test cares about filled in."""
    defaults: dict[str, Any] = dict(
        target=name,
        argv=[],
        shell_command="",
        env={},
        cwd="",
        timeout_s=1,
        retries=0,
        expected_results=1,
        log=f"logs/{name}.log",
        collects_sections=True,
    )
    return TargetRecord(name=name, status=status, **{**defaults, **fields})
