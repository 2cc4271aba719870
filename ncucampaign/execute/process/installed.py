"""What the installed ncu offers (its sections, sets, options and version), asked once per binary and cached. Apart
from provenance.py: validate and plan ask this, and need none of the manifest's models that provenance builds."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from ncucampaign.execute.process.short import answered, probe, probing_pool
from ncucampaign.execute.rundir.cache_files import read_cache_text, write_cache_text
from ncucampaign.plan.share.union import NO_CONFIG
from ncucampaign.spec.ncu_catalog import InstalledNcu, parse_help_options, parse_listing


def parse_ncu_version(text: str) -> str | None:
    """'Version 2025.3.1.0 (build 36398880) (public-release)' -> '2025.3.1.0'."""
    match = re.search(r"Version\s+(\d+(?:\.\d+)+)", text)
    return match.group(1) if match else None


def installed_ncu(ncu_path: str) -> InstalledNcu | None:
    """The sections, sets, options and version of the installed ncu; None when it cannot be asked. Asking costs
    four ncu start-ups (about 2 s), so it is cached per binary (path, size, mtime) in $XDG_CACHE_HOME/ncucampaign."""
    cached = cached_listing(ncu_path)
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


def cached_listing(ncu_path: str) -> dict[str, Any] | None:
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
