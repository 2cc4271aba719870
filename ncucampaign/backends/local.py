"""The local backend ("here"): an open run directory's units on this machine, one after another or in GPU lanes,
the manifest kept current. A failed target never stops the campaign; an interruption does, after the running
attempts were stopped gracefully, so their reports are kept."""

from __future__ import annotations

from pathlib import Path

from ncucampaign.backends.contract import Backend, Prepared, Started, Words
from ncucampaign.errors import EXIT_INTERRUPTED
from ncucampaign.execute.attempt.context import Reporter, RunContext, SerialReporter
from ncucampaign.execute.executors import Executor, GpuLanesExecutor, SequentialExecutor
from ncucampaign.execute.open_run import OpenRun, open_run
from ncucampaign.execute.prepare import RunSettings
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.request import HERE, BackendRequest
from ncucampaign.execute.timing_pass import weigh
from ncucampaign.execute.trace.cache.store import TraceCache
from ncucampaign.execute.units import RunResult, UnitRunner, execute_units
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.share.groups import share_plan
from ncucampaign.plan.units import Unit, longest_first, units_in_plan_order
from ncucampaign.spec.loader import LoadedCampaign


def executor_for(settings: RunSettings) -> Executor:
    if settings.gpus:
        return GpuLanesExecutor(settings.gpus, settings.request.jobs_per_gpu)
    return SequentialExecutor()


def planned_units(opened: OpenRun) -> tuple[list[Unit], dict[str, str]]:
    """What is left to run as units (longest first with GPU lanes), and why each lone invocation runs alone."""
    shares = share_plan(opened.to_run, opened.settings.share, opened.settings.installed, opened.settings.refused)
    units = units_in_plan_order(opened.to_run, shares)
    if opened.settings.gpus:
        units = longest_first(units, opened.previous)
    return units, {inv.name: why for inv, why in shares.alone}


class LocalRun:
    """An open run directory about to run here; `execute` runs it and lets go of the directory."""

    def __init__(self, opened: OpenRun, reporter: Reporter, stop: StopRequest) -> None:
        self.opened, self.stop = opened, stop
        settings = opened.settings
        self.ctx = RunContext(
            store=opened.store,
            book=opened.book,
            reader=settings.reader,
            reporter=SerialReporter(reporter),
            stop=stop,
            ncu_path=settings.ncu_path,
            show_output=settings.request.show_output,
        )

    def execute(self) -> RunResult:
        opened = self.opened
        try:
            units, alone = planned_units(opened)
            traces = TraceCache(opened.settings.runs_root.absolute())
            runner = UnitRunner(self.ctx, traces, alone, opened.settings.refused)
            skipped = len(opened.plan.invocations) - len(opened.to_run)
            result = execute_units(self.ctx, opened.plan, units, executor_for(opened.settings), runner, skipped)
            if opened.settings.weigh and not self.stop.level:
                weigh(self.ctx, opened.plan, traces)  # after the targets: their results get their shares
                if self.stop.level:  # stopped during the pass: the run says so, and --resume times it again
                    result.manifest.state = "interrupted"
                self.ctx.book.save()  # the whole manifest again, with what the pass added
                if self.stop.level:
                    return RunResult(result.run, result.manifest, EXIT_INTERRUPTED)
            return result
        finally:
            opened.close()


def start_run(
    loaded: LoadedCampaign, plan: Plan, settings: RunSettings, reporter: Reporter, stop: StopRequest
) -> LocalRun:
    """Open the run directory (checked, locked, manifest written) for a local run.

    `stop`: set by the caller's signal handlers; a run started after a stop request runs nothing."""
    return LocalRun(open_run(loaded, plan, settings), reporter, stop)


class LocalBackend(Backend[None]):
    name = HERE
    words = Words("stopping: asking ncu to finish and write its report (press Ctrl-C again to kill it at once).")

    def prepare(self, choice: BackendRequest, loaded: LoadedCampaign, plan: Plan, root: Path) -> Prepared[None]:
        return Prepared(root, None)

    def start(self, prepared: Prepared[None], opened: OpenRun, reporter: Reporter, stop: StopRequest) -> Started:
        result = LocalRun(opened, reporter, stop).execute()
        return Started(result.run.root, result=result)


LOCAL = LocalBackend()
