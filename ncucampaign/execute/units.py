"""Running one unit (an invocation, or a group sharing one application run) into the context's book, wherever
its records go (a local run's manifest, a batch task's record). The executors call `run_unit`; records come back."""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ncucampaign.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TARGETS_FAILED, EnvironmentProblem, first_line
from ncucampaign.execute.attempt.attempts import run_attempts
from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.executors import Executor
from ncucampaign.execute.rundir.book import now_iso
from ncucampaign.execute.rundir.manifest import Manifest, Obtained, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunDir
from ncucampaign.execute.shared.outcome import Alone, SharedOutcome
from ncucampaign.execute.shared.resumed import kept_trace
from ncucampaign.execute.shared.run import run_shared
from ncucampaign.execute.shared.stages import WHOLE, PoolStage
from ncucampaign.execute.trace.cache.kept_misses import kept_miss, miss_key
from ncucampaign.execute.trace.cache.store import TraceCache
from ncucampaign.own_time import CLOCK, OTHER
from ncucampaign.plan.argv import ncu_argv, shell_command
from ncucampaign.plan.expand import Invocation, Plan
from ncucampaign.plan.gpus import pin
from ncucampaign.plan.share.groups import SharedGroup
from ncucampaign.plan.units import Unit, invocations_of

READER_WARM_AFTER_S = 1.0


@dataclass(frozen=True)
class RunResult:
    run: RunDir
    manifest: Manifest
    exit_code: int


def execute_units(
    ctx: RunContext, plan: Plan, units: Sequence[Unit], executor: Executor, runner: UnitRunner, skipped: int
) -> RunResult:
    """Run `units` with `executor` and end the book's manifest as finished or interrupted (saved
    however it ends). `skipped`: the plan's invocations a resumed run does not run again."""
    manifest = ctx.book.manifest
    try:
        ctx.reporter.started(ctx.run, plan, skipped)
        ctx.finished.total = sum(len(invocations_of(unit)) for unit in units)
        # The reader gets ready while the first ncu process runs, once the run has lasted
        # READER_WARM_AFTER_S: a run over sooner (a fake ncu, nothing to profile) reads too little to
        # pay for starting readers it may not need; on a GPU an application's start under ncu alone
        # takes 1-15 s (docs/ncu-behaviour.md).
        warm = threading.Timer(READER_WARM_AFTER_S, ctx.reader.warm)
        warm.daemon = True
        if units:
            warm.start()
        try:
            with CLOCK.waiting():  # the units count their own phases, in whichever thread runs them
                executor.run(units, runner)
        finally:
            warm.cancel()
        manifest.state = "interrupted" if ctx.stop.level else "finished"
    except BaseException as exc:
        ctx.stop.request(1)  # the other lanes stop too (not announced: no one pressed Ctrl-C)
        manifest.state = "interrupted"
        why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"the run stopped: {first_line(exc)}"
        if isinstance(exc, EnvironmentProblem):  # perhaps no manifest can be saved: say it where it can be
            ctx.store.note_end(why)
        for record in [*manifest.targets, *manifest.shared_runs]:  # nothing is left `running`
            if record.status == Status.RUNNING:
                record.status, record.message = Status.INTERRUPTED, why
        raise
    finally:
        manifest.ended_at = now_iso()
        manifest.own_seconds = CLOCK.totals()
        try:
            ctx.book.save()
        except EnvironmentProblem as problem:
            ctx.store.note_end(f"its manifest could not be saved: {first_line(problem)}")
            if sys.exc_info()[0] is None:
                raise  # the run itself went well: this failure is the news
            # else: the failure already on its way is the news; the last saved manifest says
            # `running`, which --resume completes
    return RunResult(ctx.run, manifest, _exit_code(plan, manifest, ctx.stop.level))


def _exit_code(plan: Plan, manifest: Manifest, stopped: int) -> int:
    planned = {inv.name for inv in plan.invocations}
    if stopped:
        return EXIT_INTERRUPTED
    if all(t.status == Status.OK for t in manifest.targets if t.name in planned):
        return EXIT_OK
    return EXIT_TARGETS_FAILED


class UnitRunner:
    """The executors' session: runs units and reports each finished target. `alone_reasons`: why the share plan
    runs an invocation alone (recorded as how it was obtained)."""

    def __init__(
        self,
        ctx: RunContext,
        traces: TraceCache,
        alone_reasons: dict[str, str],
        refused: Mapping[str, str] | None = None,
        stage: PoolStage = WHOLE,
    ) -> None:
        """`refused`: invocations validate refuses, with why: closed `usage_error` unstarted. `stage`: the part of a
        trace pool its shared groups are (execute/shared/stages.py; a batch system's pool in stages)."""
        self.ctx, self.traces, self.alone_reasons, self.refused = ctx, traces, alone_reasons, refused or {}
        self.stop, self.stage = ctx.stop, stage
        self.planned: list[SharedOutcome] = []  # a pool's first stage: what each shared run handed back, unrun

    def target_finished(self, record: TargetRecord) -> None:
        self.ctx.target_finished(record)  # told once: a shared run may have told it as it read its union out

    def run_unit(self, unit: Unit, gpus: tuple[str, ...] | None, lane: str | None) -> list[TargetRecord]:
        with CLOCK.phase(OTHER):  # in a GPU lane's thread, or the run's
            return self._run_unit(unit, gpus, lane)

    def _run_unit(self, unit: Unit, gpus: tuple[str, ...] | None, lane: str | None) -> list[TargetRecord]:
        if isinstance(unit, SharedGroup):
            outcome = run_shared(self.ctx, self.traces, unit, gpus, lane, self._stage_of(unit))
            if self.stage.plan_only:  # its unions and the members it hands back run in the pool's second stage
                self.planned.append(outcome)
                return outcome.done
            return [*outcome.done, *(self._alone(alone, gpus, lane) for alone in outcome.alone)]
        why = self.alone_reasons.get(unit.name)
        if why is not None:
            self._obtained(unit.name, Obtained(how="alone", reason=why))
        if unit.name in self.refused:
            return [self._refused(unit)]
        return [self.run_target(unit, gpus, lane)]

    def _stage_of(self, group: SharedGroup) -> PoolStage:
        """A resumed run's pool runs on the trace the run took before it stopped, its report still the one recorded
        (execute/shared/resumed.py): no application start for it again."""
        if group.window != "trace" or self.stage != WHOLE:
            return self.stage
        kept = kept_trace(self.ctx.book.manifest, self.ctx.run.root, [m.name for m in group.members])
        if kept is None:
            return self.stage
        self.traces.adopt(kept.key, self.ctx.run.root / kept.report, kept.launches, kept.seconds)
        return PoolStage(trace=kept)

    def _refused(self, inv: Invocation) -> TargetRecord:
        """Closed as ncu would close it, without starting it: ncu is sure to refuse its command line."""
        record, why = self.ctx.record(inv.name), self.refused[inv.name]

        def closed() -> None:
            record.status, record.message, record.diagnosis = Status.USAGE_ERROR, f"not started: {why}", [why]

        self.ctx.book.commit(closed, record)
        return record

    def run_target(self, inv: Invocation, gpus: tuple[str, ...] | None, lane: str | None) -> TargetRecord:
        ctx, record = self.ctx, self.ctx.record(inv.name)
        if gpus is None:  # its record holds its command line, built once when the run directory was opened
            return run_attempts(ctx, inv, list(record.argv), record, lane)
        inv = pin(inv, gpus)  # a GPU of its own: --devices counts inside that view, so the command line changes
        argv = ncu_argv(inv, ctx.ncu_path, ctx.run.reports, ctx.run.report_suffix)

        def pinned() -> None:
            record.gpus = list(gpus)
            record.argv = argv
            record.env = dict(inv.env)
            record.shell_command = shell_command(argv, inv.env, inv.cwd)

        ctx.book.commit(pinned, record)
        return run_attempts(ctx, inv, argv, record, lane)

    def _alone(self, alone: Alone, gpus: tuple[str, ...] | None, lane: str | None) -> TargetRecord:
        """A member its shared run handed back: its own run, unless the run is stopping."""
        record = self.ctx.record(alone.member.name)
        if self.stop.level:

            def stopped() -> None:
                record.status = Status.INTERRUPTED
                record.message = f"interrupted before its own run ({alone.reason})"

            self.ctx.book.commit(stopped, record)
            return record
        obtained = Obtained(how="alone", reason=alone.reason, shared_run=alone.shared_run, detail=alone.detail)
        self._obtained(alone.member.name, obtained)
        record = self.run_target(alone.member, gpus, lane)
        if alone.past_trace is not None and record.status == Status.NO_KERNELS:  # the application ran to its end
            miss = kept_miss(self.ctx.book.manifest.run_id, record.diagnosis)
            self.traces.note_miss(alone.past_trace, miss_key(alone.member), miss)
        return record

    def _obtained(self, name: str, obtained: Obtained) -> None:
        record = self.ctx.record(name)
        self.ctx.book.commit(lambda: setattr(record, "obtained", obtained), record)
