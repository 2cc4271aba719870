"""One invocation's attempts: run ncu, judge the attempt, retry with tenacity when it can help, and
keep the invocation's manifest record current (every change saved at once)."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from tenacity import Retrying, retry_if_result, stop_after_attempt, wait_exponential

from ncucampaign.argv import REPORT_SUFFIX, shell_command
from ncucampaign.classify import ConsoleSummary, Status, Verdict, classify_attempt, parse_console
from ncucampaign.diagnose import diagnose
from ncucampaign.manifest import AttemptRecord, ReportInfo, TargetRecord
from ncucampaign.measure import result_records
from ncucampaign.plan import Invocation
from ncucampaign.process import RUN_MARKER, StopRequest, run_in_group
from ncucampaign.reports import count_results
from ncucampaign.rundir import RunDir, sha256_of

MAX_RETRY_WAIT_S = 300.0


def now_iso() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


class AttemptHost(Protocol):
    """What the attempts need from the campaign run."""

    run: RunDir
    ncu_path: str
    show_output: bool

    def commit(self, change: Callable[[], None]) -> None: ...
    def attempt_started(self, invocation: Invocation, number: int, of: int, lane: str | None) -> None: ...
    def attempt_finished(self, invocation: Invocation, attempt: AttemptRecord, retry_in: float | None) -> None: ...
    def echo(self, text: str) -> None: ...


class TargetAttempts:
    def __init__(
        self,
        host: AttemptHost,
        inv: Invocation,
        argv: list[str],
        record: TargetRecord,
        stop: StopRequest,
        lane: str | None = None,
    ) -> None:
        self.host, self.inv, self.argv, self.record, self.stop, self.lane = host, inv, argv, record, stop, lane
        self.report = host.run.inside("reports", inv.name + REPORT_SUFFIX)
        self.log = host.run.inside("logs", inv.name + ".log")
        self.counted: tuple[int | None, str | None] = (None, None)  # last attempt's results and their source
        self.console = ConsoleSummary()  # last attempt's console
        self.first_attempt = len(record.attempts)  # attempts of earlier runs (resume) keep their numbers

    def run(self) -> None:
        self.host.commit(lambda: setattr(self.record, "status", Status.RUNNING))
        retrying = Retrying(
            stop=stop_after_attempt(self.inv.retries + 1),
            wait=wait_exponential(multiplier=self.inv.retry_delay, max=MAX_RETRY_WAIT_S),
            retry=retry_if_result(lambda verdict: verdict.retryable and not self.stop.level),
            sleep=self.stop.sleep,
            before_sleep=self._before_sleep,
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
        )
        retrying(self.attempt)
        report = self._report_info()
        results = (
            result_records(self.report, tuple(self.inv.options.metrics or ()), self.console, self.host.ncu_path)
            if report is not None
            else []
        )

        def finish() -> None:
            self.record.seconds = round(sum(a.seconds for a in self.record.attempts[self.first_attempt :]), 3)
            self.record.report = report
            self.record.results = results

        self.host.commit(finish)

    def _before_sleep(self, state: object) -> None:
        wait = getattr(getattr(state, "next_action", None), "sleep", 0.0)
        self.host.attempt_finished(self.inv, self.record.attempts[-1], float(wait))

    def attempt(self) -> Verdict:
        number = len(self.record.attempts) + 1
        of = self.first_attempt + self.inv.retries + 1
        self._keep_previous_report()
        self.host.attempt_started(self.inv, number, of, self.lane)
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"# ncucampaign: attempt {number} of {of}, {now_iso()}\n")
            log.write(f"# {shell_command(self.argv, self.inv.env, self.inv.cwd)}\n")
            offset = log.tell()
        attempt = AttemptRecord(number=number, started_at=now_iso(), status=Status.RUNNING)
        self.host.commit(lambda: self.record.attempts.append(attempt))

        def started(pid: int) -> None:
            self.host.commit(lambda: setattr(attempt, "process_group", pid))

        outcome = run_in_group(
            self.argv,
            log_path=self.log,
            cwd=self.inv.cwd,
            env_additions={**dict(self.inv.env), RUN_MARKER: str(self.host.run.root)},
            timeout=self.inv.timeout,
            stop=self.stop,
            grace=self.inv.stop_grace,
            echo=self.host.echo if self.host.show_output else None,
            on_start=started,
        )
        console = self.console = parse_console(self.log.read_bytes()[offset:].decode(errors="replace"))
        exists = self.report.is_file()
        results = count_results(self.report, self.host.ncu_path) if exists else None
        self.counted = (results, "report") if results is not None else (console.profiled, "console")
        if exists and results is None:
            results = console.profiled  # no report reader: trust ncu's one line per result
        verdict = classify_attempt(
            exit_code=outcome.exit_code,
            console=console,
            report_exists=exists,
            results=results,
            expected=self.inv.expected_results,
            timed_out=outcome.timed_out,
            interrupted=outcome.interrupted,
            timeout_s=self.inv.timeout,
        )
        message = verdict.message
        if outcome.leftovers_killed:
            message += f"; killed {outcome.leftovers_killed} leftover process(es)"
        hints = diagnose(self.inv.options, console, verdict.status)

        def finished() -> None:
            attempt.ended_at = now_iso()
            attempt.seconds = round(outcome.seconds, 3)
            attempt.exit_code = outcome.exit_code
            attempt.status = verdict.status
            attempt.message = message
            attempt.signals_sent = list(outcome.signals_sent)
            attempt.leftovers_killed = outcome.leftovers_killed
            attempt.report = self.host.run.relative(self.report) if exists else None
            self.record.status = verdict.status
            self.record.message = message
            self.record.diagnosis = hints

        self.host.commit(finished)
        if not verdict.retryable or self.stop.level or number >= of:
            self.host.attempt_finished(self.inv, attempt, None)
        return verdict

    def _keep_previous_report(self) -> None:
        """A new attempt overwrites reports/<name>.ncu-rep: move the one already there aside first."""
        if not self.report.is_file():
            return
        previous = self.record.attempts[-1] if self.record.attempts else None
        number = previous.number if previous else 0
        kept = self.host.run.inside("reports", f"{self.inv.name}.attempt-{number}{REPORT_SUFFIX}")
        self.report.replace(kept)
        if previous is not None:
            self.host.commit(lambda: setattr(previous, "report", self.host.run.relative(kept)))

    def _report_info(self) -> ReportInfo | None:
        if not self.report.is_file():  # only the last attempt's report can be here: earlier ones were moved
            return None
        results, source = self.counted
        return ReportInfo(
            path=self.host.run.relative(self.report),
            bytes=self.report.stat().st_size,
            sha256=sha256_of(Path(self.report)),
            results=results,
            results_from=source,  # type: ignore[arg-type]
        )
