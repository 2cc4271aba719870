"""A report as the manifest records it. Apart from cache_files.py, which validate and plan use without the manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from ncucampaign.execute.rundir.cache_files import sha256_of
from ncucampaign.execute.rundir.manifest import ReportInfo


def report_info(
    path: Path, shown: str, results: int | None, results_from: Literal["report", "console"] | None
) -> ReportInfo:
    """A report as the manifest records it: `shown` (its path there), size, digest and results. Taken before a
    record book's lock: hashing is the slow part (ten splits hashing under it queued 0.2 s of own seconds)."""
    size = path.stat().st_size
    return ReportInfo(path=shown, bytes=size, sha256=sha256_of(path), results=results, results_from=results_from)
