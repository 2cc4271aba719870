"""`python -m ncucampaign.results.reading.reader_worker`: reads reports in a process of its own, since NVIDIA's
reader can abort the process on a damaged report (SIGABRT); the caller turns a crash into ReportUnreadable. One
JSON request a line on stdin ({"op", "report", "ncu", "memory", ...}), one JSON answer a line ({"ok": ...} or
{"error": "unreadable" | "no_reader", "message": ...}), until stdin ends."""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import signal
import sys
from pathlib import Path
from typing import Any

from ncucampaign.errors import NoReportReader, ReportUnreadable
from ncucampaign.results.reading.reader import (
    MeasuredResult,
    nvtx_selected,
    read_launches,
    read_results,
    read_rule_results,
)
from ncucampaign.results.reading.report_reader import ncu_report_module


def answer(request: dict[str, Any]) -> Any:
    ncu = request.get("ncu")
    if request["op"] == "warm":  # before the first report comes: load NVIDIA's reader, read one report
        return warm(ncu)
    report = Path(request["report"])
    if request["op"] == "results":
        return [record_fields(result) for result in read_results(report, tuple(request["wanted"]), ncu)]
    if request["op"] == "launches":
        return [dataclasses.asdict(launch) for launch in read_launches(report, ncu)]
    if request["op"] == "rules":
        return [dataclasses.asdict(rule) for rule in read_rule_results(report, ncu)]
    if request["op"] == "nvtx_selected":
        return {expression: sorted(nvtx_selected(report, [expression], ncu)) for expression in request["includes"]}
    raise ValueError(f"unknown op {request['op']!r}")


def record_fields(result: MeasuredResult) -> dict[str, Any]:
    """A result as the manifest's ResultRecord holds it (its process added by the caller, which validates it once)."""
    return {
        **dataclasses.asdict(result),
        "metrics": {name: {"value": value, "unit": unit} for name, (value, unit) in result.metrics.items()},
        "findings": [
            {
                "rule": found["rule"],
                "name": found["name"],
                "section": found["section"],
                "title": found["title"],
                "message": found["message"],
                "type": found["kind"],
                "estimated_speedup": found["speedup"],
                "speedup_type": found["speedup_type"],
                "focus_metrics": [metric for metric, _ in found["focus"]],
            }
            for found in result.findings
        ],
        "pm_samples": [{"label": label, "samples": samples} for label, samples in result.pm_samples],
    }


WARM_REPORT = Path(__file__).parent / "data" / "warm.ncu-rep"  # one kernel, by ncu 2025.3.1


def warm(ncu: str | None) -> bool:
    """Load NVIDIA's reader and read a one-kernel report: the reader's first read of any report pays
    a set-up (0.08-0.1 s for a report of one kernel or of hundreds) that the next ones do not."""
    if ncu_report_module(ncu) is None:
        return False
    try:
        read_results(WARM_REPORT, (), ncu)
    except Exception:  # a reader that cannot read this report (too old, say): the first real read pays
        return False
    return True


def bounded(memory: int | None) -> None:
    """At most `memory` bytes of address space (results/reading/report_limits.py): a report that would take
    more ends this process, not the machine."""
    if not memory:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = memory if hard == resource.RLIM_INFINITY else min(memory, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def main() -> int:
    # A Ctrl-C at the terminal reaches every process of the runner's group: a read in progress finishes
    # (it is bounded in time, results/reading/report_limits.py) instead of looking like a reader that crashed on
    # a damaged report; the runner stops after it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for line in sys.stdin:
        reply = reply_to(json.loads(line))
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        if reply.get("memory") or resident_bytes() > RETIRE_BYTES:
            return 0  # what it holds now is in doubt, or too much: the next report gets a fresh worker
    return 0


# NVIDIA's reader keeps what it read, freed or not: a warm worker holds 142 MB, and each read of a shared report of 256
# SpeedOfLight results (9 MB, on the fake ncu) kept 126 MB more; four held 655 MB. Past this, a worker answers and
# ends, and the next report starts a fresh one (0.3-0.5 s): reports of one result each stay in one worker for long.
RETIRE_BYTES = 256 * 2**20


def resident_bytes() -> int:
    """This process's resident memory now (Linux), or 0 where that cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def reply_to(request: dict[str, Any]) -> dict[str, Any]:
    bounded(request.get("memory"))
    try:
        if request.get("cwd"):
            os.chdir(request["cwd"])  # relative paths are the caller's
    except OSError as exc:
        return {"error": "unreadable", "message": f"{request['report']}: {exc.strerror or exc}"}
    try:
        return {"ok": answer(request)}
    except NoReportReader as exc:
        return {"error": "no_reader", "message": str(exc)}
    except ReportUnreadable as exc:
        return {"error": "unreadable", "message": str(exc)}
    except MemoryError:
        return {
            "error": "unreadable",
            "message": f"{request['report']}: reading it took more memory than its size allows",
        }


if __name__ == "__main__":
    sys.exit(main())
