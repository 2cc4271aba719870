"""Report reading through `reader_worker` in child processes (kept for the next report), so that a damaged report can
crash NVIDIA's native reader but never the runner or the command. What callers outside this module use."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

from ncucampaign.errors import NoReportReader, ReportUnreadable
from ncucampaign.execute.process.short import CAPTURE_LIMIT_BYTES
from ncucampaign.execute.process.workers import WorkerPool, worker_pool
from ncucampaign.own_time import CLOCK, REPORTS
from ncucampaign.results.reading.reader import ReportedLaunch
from ncucampaign.results.reading.report_limits import read_limits
from ncucampaign.results.reading.report_reader import NO_READER, ncu_report_module
from ncucampaign.results.reading.rules import RuleResult


def _ask(op: str, report: Path, ncu: str | None, **fields: Any) -> Any:
    if ncu_report_module(ncu) is None:  # importing the module is safe; reading a damaged report is not
        raise NoReportReader(NO_READER)
    _regular(report)
    try:
        limits = read_limits(report)
    except OSError as exc:
        raise ReportUnreadable(f"{report}: {exc.strerror or exc}") from None
    # The worker reads paths as this process would: from this process's directory, not the one it was
    # started in (a kept worker outlives a chdir: the tests run commands in their own process).
    request = json.dumps(
        {"op": op, "report": str(report), "cwd": os.getcwd(), "ncu": ncu, "memory": limits.memory, **fields}
    )
    answer = _workers().ask(request, limits.seconds, CAPTURE_LIMIT_BYTES)
    if not answer.fresh and (answer.code or '"memory": true' in (answer.line or "")):
        # A worker that had read other reports crashed or ran out of memory: this report may not be
        # at fault (its address space had grown), so a fresh worker reads it once more.
        answer = _workers().ask(request, limits.seconds, CAPTURE_LIMIT_BYTES)
    if answer.line is None:
        if answer.code is None:
            raise ReportUnreadable(f"{report}: reading it took longer than {limits.seconds:.0f} s (for its size)")
        how = f"signal {-answer.code}" if answer.code < 0 else f"exit code {answer.code}"
        raise ReportUnreadable(f"{report}: corrupt or truncated report (the report reader crashed on it: {how})")
    try:
        reply = json.loads(answer.line)
    except (ValueError, RecursionError):
        raise ReportUnreadable(f"{report}: the report reader gave no answer") from None
    if "ok" in reply:
        return reply["ok"]
    if reply.get("error") == "no_reader":
        raise NoReportReader(reply.get("message", NO_READER))
    raise ReportUnreadable(reply.get("message", f"{report}: unreadable"))


_POOL: list[WorkerPool] = []
_POOL_LOCK = threading.Lock()


def _workers() -> WorkerPool:
    """The reader workers of this process, started on first use."""
    with _POOL_LOCK:
        if not _POOL:
            here = str(Path(__file__).resolve().parents[3])  # the folder holding this ncucampaign package
            path = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
            _POOL.append(worker_pool(["-m", "ncucampaign.results.reading.reader_worker"], {"PYTHONPATH": path}))
        return _POOL[0]


def warm_up(ncu: str | None) -> None:
    """Make the first reads wait less, in threads of their own: this process imports NVIDIA's
    reader, and each worker starts, loads it and reads a one-kernel report (0.3-0.5 s a
    worker on the H200). A run asks for it a second in (execute/units.py), while its first ncu
    process runs, whose seconds it then hides in. What goes wrong here is left for the reads to meet."""

    request = json.dumps({"op": "warm", "ncu": ncu})

    def warm() -> None:
        started = False
        with CLOCK.phase(REPORTS), contextlib.suppress(Exception):  # also a pool closed as the run ends
            try:
                if ncu_report_module(ncu) is not None:
                    started = True  # the place is the worker's now, whatever becomes of it
                    workers.start_reserved(request, WARM_SECONDS, CAPTURE_LIMIT_BYTES)
            finally:
                if not started:
                    workers.release()

    workers = _workers()
    for _ in range(workers.reserve()):  # places taken now: a read that comes first waits for them
        threading.Thread(target=warm, name="reader warm-up", daemon=True).start()


WARM_SECONDS = 120.0  # a worker that takes longer to load the reader is killed; a read starts another


def _regular(report: Path) -> None:
    """Readers open regular files only: a FIFO would block the reader until its timeout."""
    try:
        mode = os.stat(report).st_mode
    except OSError as exc:
        raise ReportUnreadable(f"{report}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise ReportUnreadable(f"{report}: {kind}, not a report")


def result_rows(report: Path, wanted: tuple[str, ...] = (), ncu: str | None = None) -> list[dict[str, Any]]:
    """Every result of the report as the manifest's ResultRecord holds it (reader_worker.record_fields), not yet
    validated: the caller validates each once, with what it adds."""
    rows: list[dict[str, Any]] = _ask("results", report, ncu, wanted=list(wanted))
    return rows


def read_launches(report: Path, ncu: str | None = None) -> list[ReportedLaunch]:
    return [ReportedLaunch(**{**row, "nvtx": tuple(row["nvtx"])}) for row in _ask("launches", report, ncu)]


def nvtx_selected_each(report: Path, expressions: list[str], ncu: str | None = None) -> dict[str, set[tuple[int, int]]]:
    """For each NVTX include expression, the (range, action) pairs ncu's grammar selects; one read."""
    answer = _ask("nvtx_selected", report, ncu, includes=expressions)
    return {expression: {(int(a), int(b)) for a, b in pairs} for expression, pairs in answer.items()}


def read_rule_results(report: Path, ncu: str | None = None) -> list[RuleResult]:
    """ncu's rule results of every result in the report."""
    return [
        RuleResult(**{**row, "focus": tuple(tuple(pair) for pair in row["focus"])})
        for row in _ask("rules", report, ncu)
    ]
