"""What a resumed run keeps of the shared runs it made before it stopped: nothing finished is done again.
The discovery trace it took, its report still the file recorded, is the trace its pool runs on again (pinned: no
application start, whatever key this session computes); a union that finished, its report whole, whose members were
not read out before the stop (all of them not ok), is read out of that report, not run again. "Whole": the size and
sha256 its record holds (a report cut short or replaced is not used: its members run again)."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from pathlib import Path

from ncucampaign.execute.rundir.manifest import Manifest, ReportInfo, SharedRunRecord, TraceInfo
from ncucampaign.execute.rundir.status import Status

RESUMED_NOTE = "; read out on resume: its shared run had finished before the stop"
TRACE_ENDINGS = (Status.OK, Status.TIMED_OUT)  # a trace cut by its timeout holds what it traced until then


def whole(root: Path, report: ReportInfo | None) -> bool:
    """The report is on disk as its record says: the same size and digest."""
    if report is None:
        return False
    path = root / report.path
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size != report.bytes:
            return False
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return False
    return digest.hexdigest() == report.sha256


def kept_trace(manifest: Manifest, root: Path, members: Sequence[str]) -> TraceInfo | None:
    """The run's latest discovery trace that traced every one of `members`, its report whole (None: none)."""
    wanted = set(members)
    for record in reversed(manifest.shared_runs):
        if record.kind != "trace" or record.trace is None or record.status not in TRACE_ENDINGS:
            continue
        if wanted <= set(record.members) and whole(root, record.report):
            return record.trace
    return None


def kept_unions(manifest: Manifest, root: Path, pending: Collection[str], trace_key: str) -> list[SharedRunRecord]:
    """The run's unions on the trace of `trace_key` that finished ok, their reports whole, every member among
    `pending` (none read out yet); each once, the latest of a name first."""
    found: dict[str, SharedRunRecord] = {}
    for record in reversed(manifest.shared_runs):
        if record.kind != "union" or record.name in found or record.trace is None or record.trace.key != trace_key:
            continue
        if record.status == Status.OK and set(record.members) <= set(pending) and whole(root, record.report):
            found[record.name] = record
    return list(found.values())
