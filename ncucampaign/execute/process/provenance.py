"""Where a run happened: host, ncu version, GPUs, the workload's git state. Best effort: a missing
tool gives None, never an error."""

from __future__ import annotations

import platform
import socket
from collections.abc import Mapping
from pathlib import Path

from ncucampaign.errors import printable
from ncucampaign.execute.process.installed import cached_listing, parse_ncu_version
from ncucampaign.execute.process.short import Probed, probe, probed
from ncucampaign.execute.rundir.manifest import GitInfo, GpuInfo, HostInfo, NcuInfo
from ncucampaign.plan.gpus import VISIBLE, split_visible


def host_info() -> HostInfo:
    return HostInfo(
        hostname=socket.gethostname(),
        platform=platform.platform(),
        python=platform.python_version(),
    )


def ncu_info(ncu_path: str) -> NcuInfo:
    return NcuInfo(path=ncu_path, version=asked_version(ncu_path)[0])


def asked_version(ncu_path: str) -> tuple[str | None, str | None]:
    """ncu's version (cached per binary), or None and what `--version` did instead."""
    cached = cached_listing(ncu_path)
    if cached:
        version = cached.get("version")
        return version, None if version else "--version printed no version"
    done = probed([ncu_path, "--version"])
    version = parse_ncu_version(done.text) if done.why is None else None
    return version, None if version else _what_it_did("--version", done)


def _what_it_did(what: str, done: Probed) -> str:
    if done.why is not None:
        return done.why
    said = next((line.strip() for line in done.text.splitlines() if line.strip()), "")
    told = f": {printable(said[:160])!r}" if said else ""
    return f"{what} printed no version (exit code {done.code}){told}"


def gpu_info() -> list[GpuInfo] | None:
    return asked_gpus()[0]


def asked_gpus() -> tuple[list[GpuInfo] | None, str | None]:
    """The GPUs nvidia-smi lists, or None and why it listed none: missing, hanging, failing."""
    done = probed(["nvidia-smi", "--query-gpu=index,name,uuid,driver_version", "--format=csv,noheader"])
    if done.why is not None:
        return None, done.why
    if done.code != 0:
        said = next((line.strip() for line in done.text.splitlines() if line.strip()), "")
        return None, f"nvidia-smi failed (exit code {done.code})" + (f": {printable(said[:160])}" if said else "")
    return parse_nvidia_smi(done.text), None


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


def usable_gpus(environ: Mapping[str, str]) -> tuple[list[str], list[str]] | None:
    """The GPUs this process may use, as `--gpus all` lists them, and their other names (UUIDs);
    None when that cannot be known (no CUDA_VISIBLE_DEVICES and no nvidia-smi)."""
    visible = split_visible(environ.get(VISIBLE))
    if visible:
        return list(visible), []
    gpus = gpu_info()
    if gpus is None:
        return None
    return [str(gpu.index) for gpu in gpus], [gpu.uuid for gpu in gpus]
