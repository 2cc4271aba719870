"""A finished target's results as manifest records: the report's metric values (ncu_report), and which process
each came from (ncu's console, or its CSV import when several ran). `NcuReportReader` reads reports for execute/."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter

from ncucampaign.errors import NoReportReader
from ncucampaign.execute.attempt.classify import ConsoleSummary
from ncucampaign.execute.process.short import CAPTURE_LIMIT_BYTES, probe
from ncucampaign.execute.rundir.result_records import ProcessInfo, ResultRecord
from ncucampaign.plan.share.union import NO_CONFIG
from ncucampaign.results.reading.isolated import result_rows, warm_up

RESULT_RECORDS = TypeAdapter(list[ResultRecord])


def result_records(report: Path, wanted: tuple[str, ...], console: ConsoleSummary, ncu: str) -> list[ResultRecord]:
    """Raises NoReportReader without a reader, ReportUnreadable for a corrupt report."""
    rows = result_rows(report, wanted, ncu)
    processes = _processes(report, console, ncu, len(rows))
    return RESULT_RECORDS.validate_python([{**row, "process": processes.get(row["index"])} for row in rows])


def _processes(report: Path, console: ConsoleSummary, ncu: str, count: int) -> dict[int, ProcessInfo]:
    if len(console.connected) == 1:  # one process: every result is its
        pid, executable = console.connected[0]
        return dict.fromkeys(range(count), ProcessInfo(pid=pid, name=Path(executable).name))
    if not console.connected:
        return {}
    # a listing, not an answer: a report of thousands of results lists tens of megabytes
    text = probe([ncu, "--import", str(report), *NO_CONFIG, "--page", "raw", "--csv"], 120, limit=CAPTURE_LIMIT_BYTES)
    return parse_process_columns(text) if text else {}


def parse_process_columns(text: str) -> dict[int, ProcessInfo]:
    """Result ID -> process, from `ncu --import R --page raw --csv` (a header row, a units row, data)."""
    rows = list(csv.reader(io.StringIO(text)))
    start = next((i for i, row in enumerate(rows) if row[:3] == ["ID", "Process ID", "Process Name"]), None)
    if start is None:
        return {}
    found = {}
    for row in rows[start + 2 :]:
        if len(row) >= 3 and row[0].isdigit() and row[1].isdigit():
            found[int(row[0])] = ProcessInfo(pid=int(row[1]), name=row[2])
    return found


@dataclass(frozen=True)
class NcuReportReader:
    """The execution stage's ReportReader: results through ncu_report, in a worker process."""

    ncu: str

    def read(self, report: Path, wanted: tuple[str, ...], console: ConsoleSummary) -> list[ResultRecord] | None:
        """None without a reader: the manifest then says nothing rather than guess (results_from: console)."""
        try:
            return result_records(report, wanted, console, self.ncu)
        except NoReportReader:
            return None

    def warm(self) -> None:
        warm_up(self.ncu)
