"""Runs submitted to a batch system (Slurm, Kubernetes), for every command that meets one: merging
the tasks' records, following a submission until it ends, resuming. The system of each submission is
looked up in backends/systems.py; nothing here branches on which one it is."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ncucampaign.backends.batch.collect import Collected, collect
from ncucampaign.backends.batch.files import BatchFiles
from ncucampaign.backends.contract import BatchSystem
from ncucampaign.backends.systems import BATCH, batch_system
from ncucampaign.commands.progress import final_table
from ncucampaign.commands.running.resume import Resumed
from ncucampaign.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TARGETS_FAILED, EnvironmentProblem, UsageError
from ncucampaign.execute.open_run import OpenRun
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.manifest import BACKEND_OF_OLDER, Manifest
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.results.reading.runs import LoadedRun, load_run

POLL_S = 1.0  # how often --wait asks the batch system; a Slurm scheduler cycle is about that long


def collect_run(loaded: LoadedRun, clean_up: bool = True) -> tuple[RunStore, Collected]:
    """Merge the Slurm tasks' records into the run's manifest.json, under the run's lock (the manifest
    is read again under it: a submission may have written it since). `clean_up`: also kill what dead
    tasks left running here (collect, --resume, --wait; never a command that only reads)."""
    store = RunStore.open(loaded.root)
    with store.lock():
        return store, collect(store, load_run(loaded.root).manifest, BATCH, clean_up)


def newest_system(manifest: Manifest) -> BatchSystem[Any]:
    """The system of the run's newest submission (a run is resubmitted to the one it began on)."""
    return batch_system(manifest.submissions[-1].backend if manifest.submissions else BACKEND_OF_OLDER)


def describe(collected: Collected) -> list[str]:
    lines = [f"ncucampaign: {problem}" for problem in collected.problems]
    system = newest_system(collected.manifest)
    if not collected.queue_known:
        lines.append(
            f"{system.words.queue} cannot say which of the run's submissions still run (not on this machine?): "
            "targets whose task has not finished are shown as recorded so far"
        )
    elif collected.active:
        jobs = ", ".join(sorted(collected.active))
        lines.append(f"{system.words.following(jobs)}; collect again when it ends")
    return lines


def progress_line(manifest: Manifest) -> str:
    """'waiting for Slurm array job 4242: 3 ok, 1 running, 5 pending, 1 no_kernels'."""
    counts = Counter(target.status.value for target in manifest.targets)
    jobs = ", ".join(a.job_id for a in manifest.submissions if a.job_id)
    what = newest_system(manifest).words.job
    order = ["ok", "running", "pending"]
    parts = [f"{counts[s]} {s}" for s in order if counts[s]]
    parts += [f"{n} {s}" for s, n in sorted(counts.items()) if s not in order]
    return f"waiting for {what} {jobs}: {', '.join(parts)}"


def before_resume(resumed: Resumed) -> Resumed:
    """A run submitted to a batch system: nothing may run while its submissions do, and their records
    come first (the run as collected)."""
    if not resumed.manifest.submissions:
        return resumed
    store, collected = collect_run(LoadedRun(resumed.root, resumed.manifest))
    system = newest_system(collected.manifest)
    if not collected.queue_known:
        raise EnvironmentProblem(
            f"--resume {store.run.root}: {system.words.queue} cannot say whether the run's submissions still run"
        )
    if collected.active:
        jobs = ", ".join(sorted(collected.active))
        raise UsageError(system.words.still_running(f"--resume {store.run.root}", jobs))
    return Resumed(resumed.root, collected.manifest, None)  # written by collect: read again under the lock


def retire_rerun_claims(opened: OpenRun) -> None:
    """A local --resume of a run submitted to Slurm: the targets it reruns here must never again be
    collected from their old tasks' records."""
    if opened.settings.resume is None or not opened.manifest.submissions:
        return
    files, why = BatchFiles(opened.store), f"resume-{len(opened.manifest.resumed)}"
    for inv in opened.to_run:
        files.retire_claim(inv.name, why)


def wait(root: Path, stop: StopRequest, console: Console) -> int:
    """Follow the run's array or Job until it ends: on a terminal, a progress bar of the targets that
    ended, with the counts; otherwise (a log, CI) a line whenever a target changes state."""
    shown = ""
    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True, disable=not console.is_terminal,
    )  # fmt: skip
    with bar:
        task = bar.add_task("waiting", total=None)
        while True:
            store, collected = collect_run(load_run(root))
            if collected.done or stop.level:
                break
            progress = progress_line(collected.manifest)
            ended = sum(t.status not in (Status.PENDING, Status.RUNNING) for t in collected.manifest.targets)
            bar.update(task, description=progress, completed=ended, total=len(collected.manifest.targets))
            if progress != shown and not console.is_terminal:  # a line whenever a target changes state
                console.print(progress, highlight=False, markup=False)
            shown = progress
            stop.sleep(POLL_S)
    console.print(final_table(collected.manifest, str(store.run.root)))
    for line in describe(collected):
        console.print(line, highlight=False)
    if stop.level:
        print("ncucampaign: stopped waiting; the array goes on (collect it later)", file=sys.stderr)
        return EXIT_INTERRUPTED
    ok = all(t.status == Status.OK for t in collected.manifest.targets)
    return EXIT_OK if ok else EXIT_TARGETS_FAILED
