"""Where a run happened: host, ncu version, GPUs, the workload's git state. Best effort: a missing
tool gives None, never an error."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ncucampaign.errors import printable
from ncucampaign.execute.process.short import Probed, answered, probe, probed, probing_pool
from ncucampaign.execute.rundir.cache_files import read_cache_text, write_cache_text
from ncucampaign.execute.rundir.manifest import GitInfo, GpuInfo, HostInfo, NcuInfo
from ncucampaign.plan.gpus import VISIBLE, split_visible
from ncucampaign.plan.share.union import NO_CONFIG
from ncucampaign.spec.ncu_catalog import InstalledNcu, parse_help_options, parse_listing


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
    cached = _cached(ncu_path)
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


def parse_ncu_version(text: str) -> str | None:
    """'Version 2025.3.1.0 (build 36398880) (public-release)' -> '2025.3.1.0'."""
    match = re.search(r"Version\s+(\d+(?:\.\d+)+)", text)
    return match.group(1) if match else None


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


def installed_ncu(ncu_path: str) -> InstalledNcu | None:
    """The sections, sets, options and version of the installed ncu; None when it cannot be asked. Asking costs
    four ncu start-ups (about 2 s), so it is cached per binary (path, size, mtime) in $XDG_CACHE_HOME/ncucampaign."""
    cached = _cached(ncu_path)
    if cached is None:
        flags = ("--list-sections", "--list-sets", "--version", "--help")
        listed = ("--list-sections", "--list-sets")  # without a config file's [List] section
        with probing_pool(len(flags)) as pool:
            asked = [pool.submit(probe, [ncu_path, flag, *(NO_CONFIG if flag in listed else ())], 60) for flag in flags]
            sections, sets, version, help_text = [answered(answer) for answer in asked]
        if sections is None or sets is None:
            return None
        options = parse_help_options(help_text or "")
        cached = {
            "version": parse_ncu_version(version or ""),
            "sections": sorted(parse_listing(sections)),
            "sets": sorted(parse_listing(sets)),
            "options": sorted(options) if options is not None else None,
        }
        _store(ncu_path, cached)
    options = cached["options"]
    return InstalledNcu(
        version=cached["version"],
        sections=frozenset(cached["sections"]),
        sets=frozenset(cached["sets"]),
        options=frozenset(options) if options is not None else None,
    )


def _cache_file(ncu_path: str) -> Path | None:
    try:
        stat = Path(ncu_path).resolve().stat()
    except OSError:
        return None
    key = hashlib.sha256(f"{Path(ncu_path).resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:24]
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ncucampaign"
    return root / f"ncu-{key}.json"


def _cached(ncu_path: str) -> dict[str, Any] | None:
    """The cached answer, or None when there is none or it is not of the shape this version writes."""
    path = _cache_file(ncu_path)
    text = read_cache_text(path) if path else None
    try:
        data = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    version, sections, sets = data.get("version"), data.get("sections"), data.get("sets")
    if not (version is None or isinstance(version, str)):
        return None
    if "options" not in data:  # written before ncucampaign read --help: ask again
        return None
    listings = (sections, sets) if data["options"] is None else (sections, sets, data["options"])
    if not all(isinstance(listing, list) and all(isinstance(x, str) for x in listing) for listing in listings):
        return None
    return data


def _store(ncu_path: str, data: dict[str, Any]) -> None:
    path = _cache_file(ncu_path)
    if path is not None:
        write_cache_text(path, json.dumps(data))  # when it cannot be written: ask again next time


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
