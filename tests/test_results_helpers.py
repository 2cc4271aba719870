"""A manifest built in code, for tests of what reads manifests."""

from __future__ import annotations

from ncucampaign.manifest import CampaignInfo, GpuInfo, HostInfo, Manifest, NcuInfo, TargetRecord, ToolInfo


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
