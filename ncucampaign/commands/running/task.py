"""The one listed task behind the batch systems' thin task commands (slurm-task, k8s-task): one task of
a submission reads its targets from the submission's task list and runs them, claimed."""

from __future__ import annotations

import sys
from pathlib import Path

from ncucampaign.backends.batch.pool_tasks import run_pool_first, run_pool_units
from ncucampaign.backends.batch.task import Task, run_task
from ncucampaign.backends.systems import batch_system
from ncucampaign.commands.parts.consoles import out_console
from ncucampaign.commands.parts.progress import ConsoleReporter
from ncucampaign.errors import EXIT_OK, UsageError, printable
from ncucampaign.execute.prepare import RunSettings, resolve_ncu
from ncucampaign.execute.process.installed import installed_ncu
from ncucampaign.execute.process.signals import StopRequest, stop_on_signals
from ncucampaign.execute.rundir.manifest import TaskPlacement
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.rundir.task_list import BATCH, TaskList
from ncucampaign.plan.expand import build_plan
from ncucampaign.results.reading.records import NcuReportReader
from ncucampaign.results.reading.runs import LoadedRun
from ncucampaign.spec.loader import parse_campaign
from ncucampaign.spec.ncu_catalog import report_suffix


def run_listed_task(
    loaded_run: LoadedRun,
    listing: TaskList,
    number: int,
    index: int,
    where: TaskPlacement,
    command: str,
) -> int:
    """One batch task's run (a Slurm array task, or a Kubernetes pod): its targets, claimed."""
    root, main = loaded_run.root, loaded_run.manifest
    names = task_names(listing, number, index)
    source = Path(main.campaign.source) if main.campaign.source else root / main.campaign.copy_path
    loaded = parse_campaign((root / main.campaign.copy_path).read_text(encoding="utf-8"), source)
    plan = build_plan(loaded, main.ncu.path or None)
    check_names(names, set(plan.names()), number)
    ncu_path = resolve_ncu(plan.ncu)
    installed = installed_ncu(ncu_path)
    store = RunStore.open(root, report_suffix(installed))
    settings = RunSettings(
        runs_root=store.run.runs_root,
        ncu_path=ncu_path,
        reader=NcuReportReader(ncu_path),
        command_line=tuple(sys.argv),
        share=listing.share,
        installed=installed,  # as at submission: the same targets share
    )
    stop = StopRequest()
    console = out_console()
    reporter = ConsoleReporter(console, live=False)
    role = listing.role(index)
    with stop_on_signals(stop, reporter.stopping), reporter:
        task = Task(store, plan, settings, reporter, stop, main, where, batch_system(where.backend))
        if role is not None and role.stage == "unions":
            return run_pool_units(task, role.pool, role.waits)
        if role is not None:
            code = run_pool_first(task, names, role.pool, role.then_unions)
        else:
            result = run_task(task, names)
            code = result.exit_code if result is not None else None
    if code is None:
        console.print(f"{command}: {', '.join(names)}: claimed by another task already; nothing to do")
        return EXIT_OK
    console.print(f"{command}: record {where.record}", highlight=False)
    return code


def array_listing(root: Path, number: int) -> TaskList:
    return TaskList.read(root, number)


def task_names(listing: TaskList, number: int, index: int) -> list[str]:
    if not 0 <= index < len(listing.tasks):
        raise UsageError(f"array {number} has no task {index} ({len(listing.tasks)} tasks)")
    return list(listing.tasks[index])


def check_names(names: list[str], known: set[str], number: int) -> None:
    """A task list naming targets the run's campaign does not have is damaged (`[["nope",
    "../../x"]]` ended 'claimed by another task already' with exit 0)."""
    unknown = [name for name in names if name not in known]
    if unknown:
        shown = ", ".join(repr(printable(name)) for name in unknown[:5])
        raise UsageError(
            f"{BATCH}/array-{number}.json is damaged: its task names targets the run does not have: {shown}"
        )
