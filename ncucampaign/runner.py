"""Run a plan: one ncu invocation after another, each retried with tenacity when its failure can be
transient, every attempt recorded in the manifest, which is rewritten after each attempt.

A failed target never stops the campaign; an interruption does (after the running attempt has been
stopped gracefully, so its report is kept).
"""

from __future__ import annotations

import contextlib
import datetime
import shutil
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tenacity import Retrying, retry_if_result, stop_after_attempt, wait_exponential

from ncucampaign import __version__
from ncucampaign.argv import REPORT_SUFFIX, ncu_argv, shell_command
from ncucampaign.classify import ConsoleSummary, Status, Verdict, classify_attempt, parse_console
from ncucampaign.diagnose import diagnose
from ncucampaign.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TARGETS_FAILED, EnvironmentProblem
from ncucampaign.loader import LoadedCampaign
from ncucampaign.manifest import AttemptRecord, CampaignInfo, Manifest, ReportInfo, TargetRecord, ToolInfo
from ncucampaign.measure import result_records
from ncucampaign.plan import Invocation, Plan
from ncucampaign.process import StopRequest, run_in_group
from ncucampaign.provenance import git_info, gpu_info, host_info, ncu_info
from ncucampaign.reports import count_results
from ncucampaign.rundir import RunDir, create_run_dir, point_latest, sha256_of, write_json_atomic, write_text_atomic

MAX_RETRY_WAIT_S = 300.0


class Reporter(Protocol):
    def started(self, run: RunDir, plan: Plan) -> None: ...
    def attempt_started(self, invocation: Invocation, number: int, of: int) -> None: ...
    def attempt_finished(self, invocation: Invocation, attempt: AttemptRecord, retry_in: float | None) -> None: ...
    def target_finished(self, position: int, total: int, record: TargetRecord) -> None: ...
    def stopping(self, level: int) -> None: ...
    def echo(self, text: str) -> None: ...


@dataclass(frozen=True)
class RunSettings:
    runs_root: Path
    ncu_path: str
    show_output: bool = False
    command_line: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunResult:
    run: RunDir
    manifest: Manifest
    exit_code: int


def resolve_ncu(ncu: str) -> str:
    found = shutil.which(ncu)
    if not found:
        raise EnvironmentProblem(
            f"ncu not found: {ncu!r} is not an executable on PATH. Install Nsight Compute, "
            "or name it with --ncu PATH, NCUCAMPAIGN_NCU or the campaign's 'ncu:' key."
        )
    return str(Path(found).absolute())


def now_iso() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


@contextlib.contextmanager
def stop_on_signals(stop: StopRequest, reporter: Reporter) -> Iterator[None]:
    """First SIGINT (or any SIGTERM): stop gracefully; a second SIGINT: kill the attempt at once."""

    def on_signal(signum: int, _frame: object) -> None:
        stop.request(None if signum == signal.SIGINT else 1)
        reporter.stopping(stop.level)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class CampaignRun:
    """The state of one run: the run directory, its manifest, and how to save it."""

    def __init__(self, loaded: LoadedCampaign, plan: Plan, settings: RunSettings, reporter: Reporter) -> None:
        self.loaded, self.plan, self.settings, self.reporter = loaded, plan, settings, reporter
        self.run = create_run_dir(settings.runs_root, plan.campaign)
        copy = self.run.inside("campaign.yaml")
        write_text_atomic(copy, loaded.text)
        self.argvs = {inv.name: ncu_argv(inv, settings.ncu_path, self.run.reports) for inv in plan.invocations}
        write_json_atomic(self.run.inside("plan.json"), plan_json(plan, self.argvs))
        cwd = plan.invocations[0].cwd if plan.invocations else loaded.base_dir
        self.manifest = Manifest(
            tool=ToolInfo(version=__version__),
            run_id=self.run.run_id,
            state="running",
            started_at=now_iso(),
            command_line=["ncucampaign", *settings.command_line[1:]],
            campaign=CampaignInfo(
                name=plan.campaign,
                source=str(loaded.path.absolute()) if loaded.path.is_file() else None,
                copy_path=self.run.relative(copy),
                sha256=loaded.sha256,
            ),
            host=host_info(),
            ncu=ncu_info(settings.ncu_path),
            gpus=gpu_info(),
            workload_git=git_info(cwd),
            targets=[self._pending_record(inv) for inv in plan.invocations],
        )
        self.save()
        point_latest(self.run)

    def _pending_record(self, inv: Invocation) -> TargetRecord:
        argv = self.argvs[inv.name]
        return TargetRecord(
            name=inv.name,
            target=inv.target,
            matrix=dict(inv.matrix),
            argv=argv,
            shell_command=shell_command(argv, inv.env, inv.cwd),
            env=dict(inv.env),
            cwd=str(inv.cwd),
            timeout_s=inv.timeout,
            retries=inv.retries,
            expected_results=inv.expected_results,
            status=Status.PENDING,
            log=self.run.relative(self.log_path(inv)),
        )

    def save(self) -> None:
        write_json_atomic(self.run.manifest, self.manifest.model_dump(mode="json"))

    def report_path(self, inv: Invocation) -> Path:
        return self.run.inside("reports", inv.name + REPORT_SUFFIX)

    def log_path(self, inv: Invocation) -> Path:
        return self.run.inside("logs", inv.name + ".log")

    def execute(self, stop: StopRequest) -> RunResult:
        self.reporter.started(self.run, self.plan)
        total = len(self.plan.invocations)
        try:
            for position, (inv, record) in enumerate(zip(self.plan.invocations, self.manifest.targets, strict=True)):
                if stop.level:
                    break
                TargetAttempts(self, inv, record, stop).run()
                self.reporter.target_finished(position + 1, total, record)
        except BaseException:
            self.manifest.state = "interrupted"
            self.manifest.ended_at = now_iso()
            self.save()
            raise
        self.manifest.state = "interrupted" if stop.level else "finished"
        self.manifest.ended_at = now_iso()
        self.save()
        if stop.level:
            code = EXIT_INTERRUPTED
        elif all(t.status == Status.OK for t in self.manifest.targets):
            code = EXIT_OK
        else:
            code = EXIT_TARGETS_FAILED
        return RunResult(self.run, self.manifest, code)


class TargetAttempts:
    """Runs one invocation's attempts and keeps its manifest record current."""

    def __init__(self, campaign: CampaignRun, inv: Invocation, record: TargetRecord, stop: StopRequest) -> None:
        self.campaign, self.inv, self.record, self.stop = campaign, inv, record, stop
        self.report = campaign.report_path(inv)
        self.log = campaign.log_path(inv)
        self.counted: tuple[int | None, str | None] = (None, None)  # last attempt's results and source
        self.console = ConsoleSummary()  # last attempt's console

    def run(self) -> None:
        self.record.status = Status.RUNNING
        self.campaign.save()
        retrying = Retrying(
            stop=stop_after_attempt(self.inv.retries + 1),
            wait=wait_exponential(multiplier=self.inv.retry_delay, max=MAX_RETRY_WAIT_S),
            retry=retry_if_result(lambda verdict: verdict.retryable and not self.stop.level),
            sleep=self.stop.sleep,
            before_sleep=self._before_sleep,
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
        )
        retrying(self.attempt)
        self.record.seconds = round(sum(a.seconds for a in self.record.attempts), 3)
        self.record.report = self._report_info()
        if self.record.report is not None:
            wanted = tuple(self.inv.options.metrics or ())
            self.record.results = result_records(self.report, wanted, self.console, self.campaign.settings.ncu_path)
        self.campaign.save()

    def _before_sleep(self, state: object) -> None:
        wait = getattr(getattr(state, "next_action", None), "sleep", 0.0)
        self.campaign.reporter.attempt_finished(self.inv, self.record.attempts[-1], float(wait))

    def attempt(self) -> Verdict:
        number = len(self.record.attempts) + 1
        self._keep_previous_report()
        argv = self.campaign.argvs[self.inv.name]
        self.campaign.reporter.attempt_started(self.inv, number, self.inv.retries + 1)
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"# ncucampaign: attempt {number} of {self.inv.retries + 1}, {now_iso()}\n")
            log.write(f"# {shell_command(argv, self.inv.env, self.inv.cwd)}\n")
            offset = log.tell()
        started = now_iso()
        outcome = run_in_group(
            argv,
            log_path=self.log,
            cwd=self.inv.cwd,
            env_additions=dict(self.inv.env),
            timeout=self.inv.timeout,
            stop=self.stop,
            grace=self.inv.stop_grace,
            echo=self.campaign.reporter.echo if self.campaign.settings.show_output else None,
        )
        console = self.console = parse_console(self.log.read_bytes()[offset:].decode(errors="replace"))
        exists = self.report.is_file()
        results = count_results(self.report, self.campaign.settings.ncu_path) if exists else None
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
        self.record.attempts.append(
            AttemptRecord(
                number=number,
                started_at=started,
                ended_at=now_iso(),
                seconds=round(outcome.seconds, 3),
                exit_code=outcome.exit_code,
                status=verdict.status,
                message=message,
                signals_sent=list(outcome.signals_sent),
                leftovers_killed=outcome.leftovers_killed,
                report=self.campaign.run.relative(self.report) if exists else None,
            )
        )
        self.record.status = verdict.status
        self.record.message = message
        self.record.diagnosis = diagnose(self.inv.options, console, verdict.status)
        self.campaign.save()
        if not verdict.retryable or self.stop.level or number > self.inv.retries:
            self.campaign.reporter.attempt_finished(self.inv, self.record.attempts[-1], None)
        return verdict

    def _keep_previous_report(self) -> None:
        """A retry overwrites reports/<name>.ncu-rep: move the previous attempt's report aside first."""
        if not self.record.attempts or not self.report.is_file():
            return
        previous = self.record.attempts[-1]
        kept = self.campaign.run.inside("reports", f"{self.inv.name}.attempt-{previous.number}{REPORT_SUFFIX}")
        self.report.replace(kept)
        previous.report = self.campaign.run.relative(kept)

    def _report_info(self) -> ReportInfo | None:
        if not self.report.is_file():  # only the last attempt's report can be here: earlier ones were moved
            return None
        results, source = self.counted
        return ReportInfo(
            path=self.campaign.run.relative(self.report),
            bytes=self.report.stat().st_size,
            sha256=sha256_of(self.report),
            results=results,
            results_from=source,
        )


def plan_json(plan: Plan, argvs: dict[str, list[str]] | None = None) -> dict[str, object]:
    """The plan as data (for `plan --format json` and plan.json in the run directory)."""
    invocations = []
    for inv in plan.invocations:
        entry: dict[str, object] = {
            "name": inv.name,
            "target": inv.target,
            "matrix": dict(inv.matrix),
            "env": dict(inv.env),
            "cwd": str(inv.cwd),
            "app_argv": list(inv.app_argv),
            "timeout_s": inv.timeout,
            "retries": inv.retries,
            "expected_results": inv.expected_results,
        }
        if argvs is not None:
            entry["argv"] = argvs[inv.name]
            entry["shell_command"] = shell_command(argvs[inv.name], inv.env, inv.cwd)
        invocations.append(entry)
    return {"campaign": plan.campaign, "source": str(plan.source), "ncu": plan.ncu, "invocations": invocations}
