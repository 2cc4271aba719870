"""Run a plan into a run directory: new, or resumed. Invocations go to lanes: one lane without
--gpus (one after another), one per GPU with it (independent targets side by side, each pinned).

A failed target never stops the campaign; an interruption does, after the running attempts were
stopped gracefully, so their reports are kept. The manifest is saved after every change.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ncucampaign import __version__
from ncucampaign.argv import ncu_argv, shell_command
from ncucampaign.attempts import TargetAttempts, now_iso
from ncucampaign.classify import Status
from ncucampaign.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TARGETS_FAILED, EnvironmentProblem, UsageError
from ncucampaign.loader import LoadedCampaign
from ncucampaign.manifest import AttemptRecord, CampaignInfo, Manifest, TargetRecord, ToolInfo
from ncucampaign.plan import Invocation, Plan
from ncucampaign.process import StopRequest, kill_orphaned_group
from ncucampaign.provenance import git_info, gpu_info, host_info, ncu_info
from ncucampaign.rundir import (
    RunDir,
    create_run_dir,
    locked,
    open_run_dir,
    point_latest,
    write_json_atomic,
    write_text_atomic,
)
from ncucampaign.schedule import Decision, fingerprint, named_gpus, pin, resume_decision


class Reporter(Protocol):
    def started(self, run: RunDir, plan: Plan, skipped: int) -> None: ...
    def attempt_started(self, invocation: Invocation, number: int, of: int, lane: str | None) -> None: ...
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
    gpus: tuple[str, ...] | None = None  # run --gpus: one lane per GPU
    jobs_per_gpu: int = 1
    resume: Path | None = None
    rerun_failed: bool = False


@dataclass(frozen=True)
class RunResult:
    run: RunDir
    manifest: Manifest
    exit_code: int


@dataclass(frozen=True)
class Lane:
    gpu: str | None
    slot: int = 0

    @property
    def label(self) -> str | None:
        return None if self.gpu is None else f"GPU {self.gpu}" + (f"/{self.slot}" if self.slot else "")


def resolve_ncu(ncu: str) -> str:
    found = shutil.which(ncu)
    if not found:
        raise EnvironmentProblem(
            f"ncu not found: {ncu!r} is not an executable on PATH. Install Nsight Compute, "
            "or name it with --ncu PATH, NCUCAMPAIGN_NCU or the campaign's 'ncu:' key."
        )
    return str(Path(found).absolute())


@contextlib.contextmanager
def stop_on_signals(stop: StopRequest, reporter: Reporter) -> Iterator[None]:
    """First SIGINT (or any SIGTERM): stop gracefully; a second SIGINT: kill the attempts at once."""

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
    """One execution of a plan into a run directory, holding the directory's lock while it lives."""

    def __init__(self, loaded: LoadedCampaign, plan: Plan, settings: RunSettings, reporter: Reporter) -> None:
        self.loaded, self.plan, self.settings, self.reporter = loaded, plan, settings, reporter
        self.ncu_path, self.show_output = settings.ncu_path, settings.show_output
        self._lock = threading.RLock()
        self._exit = contextlib.ExitStack()
        if settings.resume:
            self.run = open_run_dir(settings.resume)
        else:
            self.run = create_run_dir(settings.runs_root, plan.campaign)
        self._exit.enter_context(locked(self.run))
        try:
            self._prepare()
        except BaseException:
            self._exit.close()
            raise

    # --- setting up ------------------------------------------------------------------------------------

    def _prepare(self) -> None:
        plan = self.plan
        self.argvs = {inv.name: ncu_argv(inv, self.ncu_path, self.run.reports) for inv in plan.invocations}
        copy = self.run.inside("campaign.yaml")
        write_text_atomic(copy, self.loaded.text)
        write_json_atomic(self.run.inside("plan.json"), plan_json(plan, self.argvs))
        fresh = {inv.name: self._pending_record(inv) for inv in plan.invocations}
        info = CampaignInfo(
            name=plan.campaign,
            source=str(self.loaded.path.absolute()) if self.loaded.path.is_file() else None,
            copy_path=self.run.relative(copy),
            sha256=self.loaded.sha256,
        )
        if self.settings.resume:
            self.manifest, self.to_run = self._resumed(fresh, info)
        else:
            cwd = plan.invocations[0].cwd if plan.invocations else self.loaded.base_dir
            with ThreadPoolExecutor(3) as pool:  # each asks another program; together they cost the slowest
                ncu, gpus, git = pool.submit(ncu_info, self.ncu_path), pool.submit(gpu_info), pool.submit(git_info, cwd)
            self.manifest = Manifest(
                tool=ToolInfo(version=__version__),
                run_id=self.run.run_id,
                state="running",
                started_at=now_iso(),
                command_line=["ncucampaign", *self.settings.command_line[1:]],
                campaign=info,
                host=host_info(),
                ncu=ncu.result(),
                gpus=gpus.result(),
                workload_git=git.result(),
                targets=list(fresh.values()),
            )
            self.to_run = list(plan.invocations)
        self.records = {record.name: record for record in self.manifest.targets}
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
            fingerprint=fingerprint(argv, inv),
            status=Status.PENDING,
            log=self.run.relative(self.run.inside("logs", inv.name + ".log")),
        )

    def _resumed(self, fresh: dict[str, TargetRecord], info: CampaignInfo) -> tuple[Manifest, list[Invocation]]:
        try:
            old = Manifest.model_validate(json.loads(self.run.manifest.read_text()))
        except (OSError, ValueError) as exc:
            raise UsageError(f"{self.run.manifest}: cannot resume from it: {exc}") from None
        if old.campaign.name != self.plan.campaign:
            raise UsageError(
                f"{self.run.root} holds campaign {old.campaign.name!r}, not {self.plan.campaign!r}: resume it with "
                "its own campaign file"
            )
        self._clean_up_after_a_crash(old)
        previous = {record.name: record for record in old.targets}
        records, to_run = [], []
        for inv in self.plan.invocations:
            new, before = fresh[inv.name], previous.pop(inv.name, None)
            if resume_decision(before, new.fingerprint, self.settings.rerun_failed) == Decision.SKIP:
                records.append(before if before is not None else new)  # a new target stays pending
                continue
            if before is not None:  # keep its history: attempts (and their reports) of earlier runs
                new.attempts, new.diagnosis = before.attempts, before.diagnosis
            records.append(new)
            to_run.append(inv)
        manifest = old.model_copy(
            update={
                "state": "running",
                "ended_at": None,
                "campaign": info,
                "targets": records + list(previous.values()),  # targets no longer planned stay recorded
                "resumed": [*old.resumed, now_iso()],
            }
        )
        return manifest, to_run

    def _clean_up_after_a_crash(self, old: Manifest) -> None:
        """A runner killed mid-attempt leaves ncu (in its own process group) running: stop it first."""
        for record in old.targets:
            for attempt in record.attempts:
                if attempt.ended_at is not None:
                    continue
                killed = kill_orphaned_group(attempt.process_group, str(self.run.root)) if attempt.process_group else 0
                attempt.ended_at = now_iso()
                attempt.status = Status.INTERRUPTED
                attempt.message = "the runner stopped during this attempt" + (
                    f"; {killed} process(es) it left were killed on resume" if killed else ""
                )
            if record.status == Status.RUNNING:
                record.status = Status.INTERRUPTED
                record.message = "the runner stopped during this target"

    # --- the host interface for TargetAttempts -------------------------------------------------------------

    def commit(self, change: Callable[[], None]) -> None:
        with self._lock:
            change()
            self.save()

    def save(self) -> None:
        with self._lock:
            write_json_atomic(self.run.manifest, self.manifest.model_dump(mode="json"))

    def attempt_started(self, invocation: Invocation, number: int, of: int, lane: str | None) -> None:
        with self._lock:
            self.reporter.attempt_started(invocation, number, of, lane)

    def attempt_finished(self, invocation: Invocation, attempt: AttemptRecord, retry_in: float | None) -> None:
        with self._lock:
            self.reporter.attempt_finished(invocation, attempt, retry_in)

    def echo(self, text: str) -> None:
        self.reporter.echo(text)

    # --- running ---------------------------------------------------------------------------------------

    def execute(self, stop: StopRequest) -> RunResult:
        try:
            self.reporter.started(self.run, self.plan, len(self.plan.invocations) - len(self.to_run))
            self._schedule(stop)
            self.manifest.state = "interrupted" if stop.level else "finished"
        except BaseException:
            stop.request(1)
            self.manifest.state = "interrupted"
            raise
        finally:
            self.manifest.ended_at = now_iso()
            self.save()
            self._exit.close()
        planned = {inv.name for inv in self.plan.invocations}
        if stop.level:
            code = EXIT_INTERRUPTED
        elif all(t.status == Status.OK for t in self.manifest.targets if t.name in planned):
            code = EXIT_OK
        else:
            code = EXIT_TARGETS_FAILED
        return RunResult(self.run, self.manifest, code)

    def _lanes(self) -> list[Lane]:
        if not self.settings.gpus:
            return [Lane(None)]
        return [Lane(gpu, slot) for slot in range(self.settings.jobs_per_gpu) for gpu in self.settings.gpus]

    def _schedule(self, stop: StopRequest) -> None:
        lanes, queue = self._lanes(), list(self.to_run)
        if self.settings.gpus:
            for inv in queue:
                missing = set(named_gpus(inv) or ()) - set(self.settings.gpus)
                if missing:
                    raise UsageError(f"target {inv.name} names GPU {', '.join(sorted(missing))}, not in --gpus")
        free = list(lanes)
        running: dict[Future[None], tuple[Invocation, list[Lane]]] = {}
        with ThreadPoolExecutor(max_workers=len(lanes), thread_name_prefix="ncu") as pool:
            try:
                self._dispatch(pool, queue, free, running, stop)
            except BaseException:
                stop.request(1)  # a failing worker stops the others before the pool waits for them
                raise

    def _dispatch(
        self,
        pool: ThreadPoolExecutor,
        queue: list[Invocation],
        free: list[Lane],
        running: dict[Future[None], tuple[Invocation, list[Lane]]],
        stop: StopRequest,
    ) -> None:
        total, finished = len(queue), 0
        while queue or running:
            while queue and free and not stop.level:
                picked = next(((inv, taken) for inv in queue if (taken := self._take(inv, free))), None)
                if picked is None:
                    break  # every waiting target needs a GPU that is busy
                inv, taken = picked
                queue.remove(inv)
                for lane in taken:
                    free.remove(lane)
                running[pool.submit(self._run_one, inv, taken, stop)] = (inv, taken)
            if not running:
                break  # stopping: nothing more starts
            done, _ = wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
            for future in done:
                inv, taken = running.pop(future)
                free.extend(taken)
                future.result()
                finished += 1
                with self._lock:
                    self.reporter.target_finished(finished, total, self.records[inv.name])

    def _take(self, inv: Invocation, free: list[Lane]) -> list[Lane] | None:
        """The free lanes this invocation can run on now (several when it names several GPUs)."""
        if self.settings.gpus is None:
            return free[:1]
        needed = named_gpus(inv)
        if needed is None:
            return free[:1]
        taken = []
        for gpu in needed:
            lane = next((lane for lane in free if lane.gpu == gpu and lane not in taken), None)
            if lane is None:
                return None
            taken.append(lane)
        return taken

    def _run_one(self, inv: Invocation, lanes: list[Lane], stop: StopRequest) -> None:
        record = self.records[inv.name]
        argv = self.argvs[inv.name]
        if self.settings.gpus:
            gpus = tuple(lane.gpu for lane in lanes if lane.gpu is not None)
            inv = pin(inv, gpus)
            argv = ncu_argv(inv, self.ncu_path, self.run.reports)

            def pinned() -> None:
                record.gpus = list(gpus)
                record.argv = argv
                record.env = dict(inv.env)
                record.shell_command = shell_command(argv, inv.env, inv.cwd)

            self.commit(pinned)
        TargetAttempts(self, inv, argv, record, stop, lanes[0].label).run()


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
