"""Run a plan into a run directory, new or resumed: check what can be checked before anything is
written, set up the run directory and its manifest, hand the invocations to an executor, and keep
the manifest current (saved after every change).

A failed target never stops the campaign; an interruption does, after the running attempts were
stopped gracefully, so their reports are kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ncucampaign.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TARGETS_FAILED,
    EnvironmentProblem,
)
from ncucampaign.execute.attempts import ReportReader, TargetAttempts, now_iso
from ncucampaign.execute.executors import Executor, GpuLanesExecutor, SequentialExecutor
from ncucampaign.execute.manifest import (
    AttemptRecord,
    CampaignInfo,
    Manifest,
    Obtained,
    SharedRunRecord,
    TargetRecord,
)
from ncucampaign.execute.resume import clean_up_after_a_crash, fingerprint, resumed_manifest
from ncucampaign.execute.schedule import Unit, longest_first, previous_seconds, units_in_plan_order
from ncucampaign.execute.setup import new_manifest, preflight, resumable_manifest
from ncucampaign.execute.shared import SharedRun
from ncucampaign.execute.signals import StopRequest
from ncucampaign.execute.slurm_files import SlurmFiles
from ncucampaign.execute.status import Status
from ncucampaign.execute.store import RunDir, RunStore, latest_run
from ncucampaign.execute.trace_run import TraceRunner
from ncucampaign.execute.traces import TraceCache
from ncucampaign.plan.argv import ncu_argv, plan_json, shell_command
from ncucampaign.plan.expand import Invocation, Plan
from ncucampaign.plan.gpus import pin
from ncucampaign.plan.share import SharedGroup, share_plan
from ncucampaign.spec.loader import LoadedCampaign


class Reporter(Protocol):
    def started(self, run: RunDir, plan: Plan, skipped: int) -> None: ...
    def attempt_started(self, invocation: Invocation, number: int, of: int, lane: str | None) -> None: ...
    def attempt_finished(self, invocation: Invocation, attempt: AttemptRecord, retry_in: float | None) -> None: ...
    def target_finished(self, position: int, total: int, record: TargetRecord) -> None: ...
    def echo(self, text: str) -> None: ...


@dataclass(frozen=True)
class RunSettings:
    runs_root: Path
    ncu_path: str
    reader: ReportReader
    show_output: bool = False
    command_line: tuple[str, ...] = ()
    gpus: tuple[str, ...] | None = None  # run --gpus: one lane per GPU
    jobs_per_gpu: int = 1
    resume: Path | None = None
    rerun_failed: bool = False
    share: bool = True  # run --no-share: every target in its own application run


@dataclass(frozen=True)
class RunResult:
    run: RunDir
    manifest: Manifest
    exit_code: int


def executor_for(settings: RunSettings) -> Executor:
    if settings.gpus:
        return GpuLanesExecutor(settings.gpus, settings.jobs_per_gpu)
    return SequentialExecutor()


def start_run(
    loaded: LoadedCampaign, plan: Plan, settings: RunSettings, reporter: Reporter, stop: StopRequest
) -> CampaignRun:
    """Check, then create (or reopen) the run directory, take its lock and write the starting manifest.

    `stop`: set by the caller's signal handlers; a run started after a stop request runs nothing."""
    preflight(plan, settings)
    previous = previous_seconds(settings.resume or latest_run(settings.runs_root.absolute(), plan.campaign))
    store = RunStore.open(settings.resume) if settings.resume else RunStore.create(settings.runs_root, plan.campaign)
    held = contextlib.ExitStack()
    held.enter_context(store.lock())
    try:
        old = resumable_manifest(store, plan) if settings.resume else None
        store.check_contents()
        run = CampaignRun(loaded, plan, settings, reporter, store, held, stop)
        run.previous = previous
        run.begin(old)
    except BaseException:
        held.close()
        raise
    return run


class CampaignRun:
    """One execution of a plan into a run directory, holding the directory's lock while it lives."""

    def __init__(
        self,
        loaded: LoadedCampaign,
        plan: Plan,
        settings: RunSettings,
        reporter: Reporter,
        store: RunStore,
        held: contextlib.ExitStack,
        stop: StopRequest,
    ) -> None:
        self.loaded, self.plan, self.settings, self.reporter = loaded, plan, settings, reporter
        self.store, self._held = store, held
        self.reader, self.show_output = settings.reader, settings.show_output
        self._lock = threading.RLock()
        self.stop = stop
        self.argvs = {inv.name: ncu_argv(inv, settings.ncu_path, store.run.reports) for inv in plan.invocations}
        self.ncu_path = settings.ncu_path
        self.traces = TraceRunner(self, TraceCache(settings.runs_root.absolute()))
        self.previous: dict[str, float] = {}
        self.alone_reasons: dict[str, str] = {}

    def begin(self, old: Manifest | None) -> None:
        run = self.store.run
        if old is not None:
            clean_up_after_a_crash(old, str(run.root), now_iso())
        self.store.make_folders()
        copy = self.store.write_text("campaign.yaml", self.loaded.text)
        self.store.write_json("plan.json", plan_json(self.plan, self.argvs))
        fresh = {inv.name: self._pending_record(inv) for inv in self.plan.invocations}
        info = CampaignInfo(
            name=self.plan.campaign,
            source=str(self.loaded.path.absolute()) if self.loaded.path.is_file() else None,
            copy_path=run.relative(copy),
            sha256=self.loaded.sha256,
        )
        if old is not None:
            self.manifest, self.to_run = resumed_manifest(
                old, self.plan.invocations, fresh, info, self.settings.rerun_failed, now_iso()
            )
        else:
            self.manifest, self.to_run = (
                new_manifest(self.store, self.plan, self.loaded, self.settings, list(fresh.values()), info),
                list(self.plan.invocations),
            )
        self.records = {record.name: record for record in self.manifest.targets}
        if old is not None and old.slurm_arrays:  # run here now: an old Slurm task's record is history
            files, why = SlurmFiles(self.store), f"resume-{len(self.manifest.resumed)}"
            for inv in self.to_run:
                files.retire_claim(inv.name, why)
        self.save()
        self.store.point_latest()

    def _pending_record(self, inv: Invocation, argv: list[str] | None = None) -> TargetRecord:
        argv = argv if argv is not None else self.argvs[inv.name]
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
            fingerprint=fingerprint(argv, inv),
            status=Status.PENDING,
            log=self.store.run.relative(self.store.run.log(inv.name)),
        )

    # --- what the attempts and the executor ask of the run ------------------------------------------------

    def commit(self, change: Callable[[], None]) -> None:
        with self._lock:
            change()
            self.save()

    def save(self) -> None:
        with self._lock:
            self.store.save_manifest(self.manifest.model_dump(mode="json"))

    def attempt_started(self, invocation: Invocation, number: int, of: int, lane: str | None) -> None:
        with self._lock:
            self.reporter.attempt_started(invocation, number, of, lane)

    def attempt_finished(self, invocation: Invocation, attempt: AttemptRecord, retry_in: float | None) -> None:
        with self._lock:
            self.reporter.attempt_finished(invocation, attempt, retry_in)

    def echo(self, text: str) -> None:
        self.reporter.echo(text)

    def run_target(self, inv: Invocation, gpus: tuple[str, ...] | None, lane: str | None) -> TargetRecord:
        record = self.records[inv.name]
        argv = self.argvs[inv.name]
        if gpus is not None:
            inv = pin(inv, gpus)
            argv = ncu_argv(inv, self.settings.ncu_path, self.store.run.reports)

            def pinned() -> None:
                record.gpus = list(gpus)
                record.argv = argv
                record.env = dict(inv.env)
                record.shell_command = shell_command(argv, inv.env, inv.cwd)

            self.commit(pinned)
        TargetAttempts(self, inv, argv, record, self.stop, lane).run()
        return record

    def run_unit(self, unit: Unit, gpus: tuple[str, ...] | None, lane: str | None) -> list[TargetRecord]:
        if isinstance(unit, SharedGroup):
            return SharedRun(self, unit, gpus, lane).run()
        why = self.alone_reasons.get(unit.name)
        if why is not None:
            self.commit(lambda: setattr(self.records[unit.name], "obtained", Obtained(how="alone", reason=why)))
        return [self.run_target(unit, gpus, lane)]

    def new_shared_record(
        self, union: Invocation, members: Sequence[Invocation], window: str, gpus: tuple[str, ...] | None
    ) -> SharedRunRecord:
        """A shared run (or trace) entered in the manifest before it starts; names are unique in the run."""
        name = union.name if union.name.startswith("shared/") else self.shared_name()
        self.store.make_folders("shared")
        argv = ncu_argv(dataclasses.replace(union, name=name), self.settings.ncu_path, self.store.run.reports)
        record = SharedRunRecord(
            **self._pending_record(dataclasses.replace(union, name=name), argv).model_dump(),
            members=[m.name for m in members],
            window=window,  # type: ignore[arg-type]
        )
        record.gpus = list(gpus) if gpus else None
        self.commit(lambda: self.manifest.shared_runs.append(record))
        return record

    def shared_name(self) -> str:
        """The next union's name: shared/1, shared/2, ..."""
        unions = sum(1 for r in self.manifest.shared_runs if not r.name.startswith("shared/trace-"))
        return f"shared/{unions + 1}"

    def target_finished(self, record: TargetRecord, position: int, total: int) -> None:
        with self._lock:
            self.reporter.target_finished(position, total, record)

    # --- running ---------------------------------------------------------------------------------------

    def execute(self) -> RunResult:
        try:
            self.reporter.started(self.store.run, self.plan, len(self.plan.invocations) - len(self.to_run))
            executor_for(self.settings).run(self.units(), self)
            self.manifest.state = "interrupted" if self.stop.level else "finished"
        except BaseException:
            self.stop.request(1)
            self.manifest.state = "interrupted"
            raise
        finally:
            self.manifest.ended_at = now_iso()
            try:
                self.save()
            except EnvironmentProblem:
                if sys.exc_info()[0] is None:
                    raise  # the run itself went well: this failure is the news
                # else: the failure already on its way is the news; the last saved manifest says
                # `running`, which --resume completes
            finally:
                self._held.close()
        return RunResult(self.store.run, self.manifest, self._exit_code())

    def close(self) -> None:
        """Let go of the run directory without running anything (a submitted Slurm array runs it)."""
        self._held.close()

    def units(self) -> list[Unit]:
        shares = share_plan(self.to_run, self.settings.share)
        self.alone_reasons = {inv.name: why for inv, why in shares.alone}
        units = units_in_plan_order(self.to_run, shares)
        return longest_first(units, self.previous) if self.settings.gpus else units

    def _exit_code(self) -> int:
        planned = {inv.name for inv in self.plan.invocations}
        if self.stop.level:
            return EXIT_INTERRUPTED
        if all(t.status == Status.OK for t in self.manifest.targets if t.name in planned):
            return EXIT_OK
        return EXIT_TARGETS_FAILED
