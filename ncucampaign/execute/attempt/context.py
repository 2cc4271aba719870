"""What every piece of execution is handed: the run context (as tox hands `run_one` an environment). Attempts,
shared runs, splits and traces take a `RunContext` and hand back records or outcomes, knowing no backend."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ncucampaign.execute.attempt.classify import ConsoleSummary
from ncucampaign.execute.attempt.launches import LaunchCount
from ncucampaign.execute.attempt.repeated import RepeatedFailures
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.book import RecordBook
from ncucampaign.execute.rundir.manifest import AttemptRecord, TargetRecord
from ncucampaign.execute.rundir.result_records import ResultRecord
from ncucampaign.execute.rundir.store import RunDir, RunStore
from ncucampaign.plan.expand import Invocation, Plan


class ReportReader(Protocol):
    """Reads what a report holds; the results stage provides it (execution does not read reports itself)."""

    def read(self, report: Path, wanted: tuple[str, ...], console: ConsoleSummary) -> list[ResultRecord] | None:
        """Every result; None when there is no reader; ReportUnreadable when the report is damaged."""
        ...

    def warm(self) -> None:
        """Get ready to read, beside the caller (it returns at once and never raises)."""
        ...


class Reporter(Protocol):
    """What a run tells the person watching it (commands/parts/progress.py draws it)."""

    def started(self, run: RunDir, plan: Plan, skipped: int) -> None: ...
    def attempt_started(self, invocation: Invocation, number: int, of: int, lane: str | None) -> None: ...
    def attempt_finished(self, invocation: Invocation, attempt: AttemptRecord, retry_in: float | None) -> None: ...
    def target_finished(self, position: int, total: int, record: TargetRecord) -> None: ...
    def phase(self, what: str, progress: str = "") -> None: ...  # what the run does now (planning, reading out)
    def launches(self, invocation: Invocation, count: LaunchCount, done: bool = False) -> None: ...  # how far it is
    def echo(self, text: str) -> None: ...


class SerialReporter:
    """A reporter that several GPU lanes may call at once: one call at a time reaches the display."""

    def __init__(self, reporter: Reporter) -> None:
        self._reporter, self._lock = reporter, threading.Lock()

    def started(self, run: RunDir, plan: Plan, skipped: int) -> None:
        with self._lock:
            self._reporter.started(run, plan, skipped)

    def attempt_started(self, invocation: Invocation, number: int, of: int, lane: str | None) -> None:
        with self._lock:
            self._reporter.attempt_started(invocation, number, of, lane)

    def attempt_finished(self, invocation: Invocation, attempt: AttemptRecord, retry_in: float | None) -> None:
        with self._lock:
            self._reporter.attempt_finished(invocation, attempt, retry_in)

    def target_finished(self, position: int, total: int, record: TargetRecord) -> None:
        with self._lock:
            self._reporter.target_finished(position, total, record)

    def phase(self, what: str, progress: str = "") -> None:
        with self._lock:
            self._reporter.phase(what, progress)

    def launches(self, invocation: Invocation, count: LaunchCount, done: bool = False) -> None:
        with self._lock:
            self._reporter.launches(invocation, count, done)

    def echo(self, text: str) -> None:
        self._reporter.echo(text)  # live output of one process: a line at a time already


class FinishedTargets:
    """The targets the display was told had ended, each once, whoever ended it: a shared run as a union's members are
    recorded out of its report (while the next union profiles), the executor as each unit comes back. Before, a
    trace pool's targets were told only when the whole pool had ended: 0 of 300 through every union."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._told: set[str] = set()
        self.total = 0  # the targets this run (or task) runs: execute_units sets it before the first starts

    def tell(self, reporter: Reporter, record: TargetRecord) -> None:
        with self._lock:
            if record.name in self._told:
                return
            self._told.add(record.name)
            position = len(self._told)
        reporter.target_finished(position, max(self.total, position), record)


@dataclass(frozen=True)
class RunContext:
    """One run's (or one Slurm task's) surroundings, handed down to everything that executes."""

    store: RunStore
    book: RecordBook  # where records go
    reader: ReportReader
    reporter: Reporter  # a SerialReporter
    stop: StopRequest
    ncu_path: str
    show_output: bool = False
    failures: RepeatedFailures = field(default_factory=RepeatedFailures)  # across the run's targets
    finished: FinishedTargets = field(default_factory=FinishedTargets)

    @property
    def run(self) -> RunDir:
        return self.store.run

    def record(self, name: str) -> TargetRecord:
        return self.book.records[name]

    def target_finished(self, record: TargetRecord) -> None:
        """Tell the display that `record` has ended (once, however many tell it)."""
        self.finished.tell(self.reporter, record)
