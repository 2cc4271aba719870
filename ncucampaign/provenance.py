"""Where a run happened: host, ncu version, GPUs, the workload's git state. Best effort: a missing
tool gives None, never an error."""

from __future__ import annotations

import platform
import re
import socket
from pathlib import Path

from ncucampaign.lint import InstalledNcu, parse_listing
from ncucampaign.manifest import GitInfo, GpuInfo, HostInfo, NcuInfo
from ncucampaign.process import probe


def host_info() -> HostInfo:
    return HostInfo(
        hostname=socket.gethostname(),
        platform=platform.platform(),
        python=platform.python_version(),
    )


def ncu_info(ncu_path: str) -> NcuInfo:
    return NcuInfo(path=ncu_path, version=parse_ncu_version(probe([ncu_path, "--version"]) or ""))


def parse_ncu_version(text: str) -> str | None:
    """'Version 2025.3.1.0 (build 36398880) (public-release)' -> '2025.3.1.0'."""
    match = re.search(r"Version\s+(\d+(?:\.\d+)+)", text)
    return match.group(1) if match else None


def gpu_info() -> list[GpuInfo] | None:
    text = probe(["nvidia-smi", "--query-gpu=index,name,uuid,driver_version", "--format=csv,noheader"])
    return parse_nvidia_smi(text) if text is not None else None


def parse_nvidia_smi(text: str) -> list[GpuInfo]:
    gpus = []
    for line in text.splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) == 4 and parts[0].isdigit():
            gpus.append(GpuInfo(index=int(parts[0]), name=parts[1], uuid=parts[2], driver_version=parts[3]))
    return gpus


def git_info(directory: Path) -> GitInfo | None:
    root = probe(["git", "-C", str(directory), "rev-parse", "--show-toplevel"])
    commit = probe(["git", "-C", str(directory), "rev-parse", "HEAD"])
    if not root or not commit:
        return None
    status = probe(["git", "-C", str(directory), "status", "--porcelain", "--untracked-files=no"])
    return GitInfo(root=root.strip(), commit=commit.strip(), dirty=bool(status and status.strip()))


def installed_ncu(ncu_path: str) -> InstalledNcu | None:
    """The sections and sets the installed ncu lists; None when it cannot be asked."""
    sections = probe([ncu_path, "--list-sections"], timeout=60)
    sets = probe([ncu_path, "--list-sets"], timeout=60)
    if sections is None or sets is None:
        return None
    version = parse_ncu_version(probe([ncu_path, "--version"]) or "")
    return InstalledNcu(version=version, sections=parse_listing(sections), sets=parse_listing(sets))
