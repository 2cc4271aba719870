"""One invocation's attempts: run ncu, judge the attempt, retry with tenacity when it can help, and keep the
record current through the context's book (each change saved at once). Hands back the record; calls nothing above."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tenacity import Retrying, retry_if_result, stop_after_attempt, wait_exponential

from ncucampaign.errors import ReportUnreadable
from ncucampaign.execute.attempt.classify import ConsoleSummary, Verdict, classify_attempt, parse_console
from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.attempt.diagnose import diagnose
from ncucampaign.execute.attempt.launches import launch_watch
from ncucampaign.execute.attempt.ncu_checks import InstalledNcuChecks
from ncucampaign.execute.attempt.refusals import MachineRefused, machine_refusal
from ncucampaign.execute.attempt.repeated import SAME_ERROR_STOPS
from ncucampaign.execute.attempt.trace_hints import ranges_seen_hints
from ncucampaign.execute.process.groups import RUN_MARKER, ProcessOutcome, run_in_group
from ncucampaign.execute.rundir.book import now_iso
from ncucampaign.execute.rundir.manifest import AttemptRecord, ReportInfo, TargetRecord
from ncucampaign.execute.rundir.report_record import report_info
from ncucampaign.execute.rundir.result_records import ResultRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.own_time import CLOCK, REPORTS
from ncucampaign.plan.argv import shell_command
from ncucampaign.plan.expand import MAX_RETRY_WAIT_S, Invocation


@dataclass(frozen=True)
class Judged:
    """An attempt's outcome as the runner sees it."""

    verdict: Verdict
    console: ConsoleSummary
    report_exists: bool
    results: int | None
    results_from: Literal["report", "console"]
    readable: bool = True  # False: the report exists but is damaged
    read: list[ResultRecord] | None = None  # what the report holds (None: no reader, or no report)


def application_of(inv: Invocation) -> tuple[object, ...]:
    """What decides whether the application can start: its command line, folder and environment (but
    the GPU a lane pins it to)."""
    env = tuple((k, v) for k, v in inv.env if k != "CUDA_VISIBLE_DEVICES")
    return (inv.app_argv, str(inv.cwd), env)


def run_attempts(
    ctx: RunContext,
    inv: Invocation,
    argv: list[str],
    record: TargetRecord,
    lane: str | None = None,
    read_results: bool = True,
) -> TargetRecord:
    """Run `inv` until ok, failed for good or stopped; `record` (in the book) holds every attempt. `read_results`
    False: results counted from ncu's console (a shared run or trace, whose report is only imported again)."""
    _TargetAttempts(ctx, inv, argv, record, lane, read_results).run()
    return record


class _TargetAttempts:
    def __init__(
        self,
        ctx: RunContext,
        inv: Invocation,
        argv: list[str],
        record: TargetRecord,
        lane: str | None,
        read_results: bool,
    ) -> None:
        self.ctx, self.inv, self.argv, self.record, self.lane = ctx, inv, argv, record, lane
        self.stop = ctx.stop
        self.read_results = read_results
        self.run_dir = ctx.store.run
        self.report = self.run_dir.report(inv.name)
        self.last: Judged | None = None
        self.first_attempt = len(record.attempts)  # attempts of earlier runs (resume) keep their numbers

    def commit(self, change: Callable[[], None]) -> None:
        """Every change an attempt makes is to its target's record."""
        self.ctx.book.commit(change, self.record)

    def run(self) -> None:
        why = self.ctx.failures.not_starting(application_of(self.inv))
        if why is not None:
            self.commit(lambda: self._closed(why))
            return
        self.commit(lambda: setattr(self.record, "status", Status.RUNNING))
        retrying = Retrying(
            stop=stop_after_attempt(self.inv.retries + 1),
            wait=wait_exponential(multiplier=self.inv.retry_delay, max=MAX_RETRY_WAIT_S),
            # a stop decides in `attempt`: also one that came after the attempt ended closes the target interrupted
            retry=retry_if_result(lambda verdict: verdict.retryable),
            sleep=self._wait_before_retry,
            before_sleep=self._before_sleep,
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
        )
        retrying(self.attempt)
        report = self._report_info()
        results = (self.last.read or []) if report is not None and self.last is not None else []

        def finish() -> None:
            self.record.seconds = round(sum(a.seconds for a in self.record.attempts[self.first_attempt :]), 3)
            self.record.report = report
            self.record.results = results

        self.commit(finish)

    def _closed(self, message: str) -> None:
        self.record.status, self.record.message = Status.APP_FAILED, message

    def _wait_before_retry(self, seconds: float) -> None:
        """The back-off before a retry is a wait, not the run's own time (10 s of it were 'other' seconds)."""
        with CLOCK.waiting():
            self.stop.sleep(seconds)

    def _before_sleep(self, state: object) -> None:
        if self.stop.level:  # announced as finished already: no retry will start
            return
        wait = getattr(getattr(state, "next_action", None), "sleep", 0.0)
        self.ctx.reporter.attempt_finished(self.inv, self.record.attempts[-1], float(wait))

    def attempt(self) -> Verdict:
        number = len(self.record.attempts) + 1
        of = self.first_attempt + self.inv.retries + 1
        if self.stop.level:  # a stop during the wait before a retry: start nothing new
            return self._not_started(number)
        self._keep_previous_report()
        self.ctx.reporter.attempt_started(self.inv, number, of, self.lane)
        offset = self.ctx.store.append_log(
            self.inv.name,
            f"# ncucampaign: attempt {number} of {of}, {now_iso()}\n"
            f"# {shell_command(self.argv, self.inv.env, self.inv.cwd)}\n",
        )
        attempt = AttemptRecord(number=number, started_at=now_iso(), status=Status.RUNNING)
        self.commit(lambda: self.record.attempts.append(attempt))
        outcome = self._run_ncu(attempt, offset)
        judged = self.last = self._repeated(self._judge(outcome, offset), number)
        if judged.verdict.cannot_start:
            self.ctx.failures.cannot_start(application_of(self.inv), self.inv.name, judged.console.app_last_line)
        self._record(attempt, outcome, judged)
        refusal = machine_refusal(judged.console.errors)
        if not judged.verdict.retryable or self.stop.level or number >= of or refusal:
            self.ctx.reporter.attempt_finished(self.inv, attempt, None)
        if refusal is not None:  # recorded above; every other target would meet it too
            raise MachineRefused(refusal, f"{self.inv.name}: {self.run_dir.relative(self.run_dir.log(self.inv.name))}")
        return judged.verdict

    def _repeated(self, judged: Judged, number: int) -> Judged:
        """An application error that ended several targets' first attempts before anything was
        profiled is the workload's, not a flake: it is not retried again (and the message says so)."""
        error = judged.console.app_last_line
        if judged.verdict.status != Status.APP_FAILED or judged.console.profiled or not error:
            return judged
        failures = self.ctx.failures
        if number == self.first_attempt + 1:
            failures.note(error, self.inv.name)
            if failures.count(error) >= SAME_ERROR_STOPS:  # the command's own error: its other targets wait no more
                failures.failing(application_of(self.inv), error)
        if not judged.verdict.retryable or not failures.deterministic(error):
            return judged
        message = (
            f"{judged.verdict.message}; not retried: {failures.described(error)} ended "
            "with this application error before anything was profiled"
        )
        return dataclasses.replace(judged, verdict=Verdict(judged.verdict.status, False, message))

    def _not_started(self, number: int) -> Verdict:
        verdict = Verdict(Status.INTERRUPTED, False, f"interrupted before attempt {number} started")
        earlier = self.record.message

        def stopped() -> None:
            self.record.status = Status.INTERRUPTED
            self.record.message = verdict.message + (f" (attempt {number - 1}: {earlier})" if earlier else "")

        self.commit(stopped)
        return verdict

    def _run_ncu(self, attempt: AttemptRecord, log_offset: int) -> ProcessOutcome:
        def started(pid: int) -> None:
            self.commit(lambda: setattr(attempt, "process_group", pid))

        def signalled(name: str) -> None:  # recorded as sent: a crash mid-escalation still shows it
            self.commit(lambda: attempt.signals_sent.append(name))

        log = self.run_dir.log(self.inv.name)
        reporter, inv = self.ctx.reporter, self.inv
        watch, ended = launch_watch(inv, log, log_offset, lambda count, done: reporter.launches(inv, count, done))
        env = {**dict(inv.env), RUN_MARKER: str(self.run_dir.root)}
        echo = reporter.echo if self.ctx.show_output else None
        outcome = run_in_group(self.argv, log_path=log, cwd=inv.cwd, env_additions=env, timeout=inv.timeout,
                               stop=self.stop, grace=inv.stop_grace, echo=echo, on_start=started,
                               on_signal=signalled, watch=watch)  # fmt: skip
        ended()
        return outcome

    def _judge(self, outcome: ProcessOutcome, log_offset: int) -> Judged:
        console = parse_console(self.ctx.store.read_log(self.inv.name, log_offset))
        exists = self.report.is_file()
        unreadable, read = None, None
        try:  # read once per attempt: the count decides the verdict, the results go to the manifest
            wanted = tuple(self.inv.options.metrics or ())
            if exists and self.read_results:
                with CLOCK.phase(REPORTS):
                    read = self.ctx.reader.read(self.report, wanted, console)
        except ReportUnreadable as exc:
            unreadable = str(exc)
        counted = len(read) if read is not None else None
        if counted == 0:  # ncu writes no report when it profiled nothing: an empty one is damaged
            counted, unreadable = None, f"{self.report.name} holds no results"
        source: Literal["report", "console"] = "report" if counted is not None else "console"
        results = counted if counted is not None else console.profiled
        verdict = classify_attempt(
            exit_code=outcome.exit_code,
            console=console,
            report_exists=exists,
            # no report reader: trust ncu's one line per result
            results=results if exists else None,
            expected=self.inv.expected_results,
            timed_out=outcome.timed_out,
            interrupted=outcome.interrupted,
            timeout_s=self.inv.timeout,
            stalled=outcome.stalled,
        )
        if unreadable and verdict.status in (Status.OK, Status.INCOMPLETE) and self.stop.level:
            # stopped while the report was read: the report is no evidence of damage
            verdict = Verdict(Status.INTERRUPTED, False, "interrupted while its report was read; the report is kept")
        elif unreadable and verdict.status in (Status.OK, Status.INCOMPLETE):
            profiled = f"; ncu's console shows {console.profiled} profiled" if console.profiled else ""
            verdict = Verdict(Status.PROFILER_ERROR, True, f"the report cannot be read ({unreadable}){profiled}")
        return Judged(verdict, console, exists, results, source, readable=exists and not unreadable, read=read)

    def _record(self, attempt: AttemptRecord, outcome: ProcessOutcome, judged: Judged) -> None:
        message = judged.verdict.message
        if outcome.leftovers_killed:
            message += f"; killed {outcome.leftovers_killed} leftover process(es)"
        hints = diagnose(self.inv.options, judged.console, judged.verdict.status, InstalledNcuChecks(self.argv[0]))
        if judged.verdict.status == Status.NO_KERNELS and self.inv.options.nvtx_include:  # a typo, said alone
            paths = [path for t in list(self.ctx.book.manifest.targets) for r in t.results for path in r.nvtx]
            hints = ranges_seen_hints(self.inv.options, paths) or hints

        def finished() -> None:
            attempt.ended_at = now_iso()
            attempt.seconds = round(outcome.seconds, 3)
            attempt.exit_code = outcome.exit_code
            attempt.status = judged.verdict.status
            attempt.message = message
            attempt.signals_sent = list(outcome.signals_sent)
            attempt.leftovers_killed = outcome.leftovers_killed
            attempt.report = self.run_dir.relative(self.report) if judged.report_exists else None
            self.record.status = judged.verdict.status
            self.record.message = message
            self.record.diagnosis = hints

        self.commit(finished)

    def _keep_previous_report(self) -> None:
        """A new attempt overwrites reports/<name>.ncu-rep: move the one already there aside first."""
        previous = self.record.attempts[-1] if self.record.attempts else None
        kept = self.ctx.store.keep_report(self.inv.name, previous.number if previous else 0)
        if kept is not None and previous is not None:
            self.commit(lambda: setattr(previous, "report", kept))

    def _report_info(self) -> ReportInfo | None:
        # only the last attempt's report can be here: earlier ones were moved
        if not self.report.is_file() or (self.last is not None and not self.last.readable):
            return None
        judged = self.last
        counted = judged if judged is not None and judged.report_exists else None
        results, results_from = (counted.results, counted.results_from) if counted else (None, None)
        return report_info(self.report, self.run_dir.relative(self.report), results, results_from)
