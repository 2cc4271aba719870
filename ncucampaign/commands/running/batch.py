"""Runs submitted to a batch system (Slurm, Kubernetes), for every command that meets one: merging
the tasks' records, following a submission until it ends, resuming. The system of each submission is
looked up in backends/systems.py; nothing here branches on which one it is."""

from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ncucampaign.backends.batch.collect import Collected, collect
from ncucampaign.backends.batch.files import BatchFiles
from ncucampaign.backends.contract import BatchSystem
from ncucampaign.backends.systems import BATCH, batch_system
from ncucampaign.commands.parts.progress import LAUNCHES_EVERY_S
from ncucampaign.commands.running.resume import Resumed
from ncucampaign.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TARGETS_FAILED, EnvironmentProblem, UsageError
from ncucampaign.execute.attempt.launches import profiled_in
from ncucampaign.execute.open_run import OpenRun
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.manifest import BACKEND_OF_OLDER, Manifest
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.own_time import CLOCK, RECORDS
from ncucampaign.results.reading.runs import load_run

POLL_S = 1.0  # how often --wait asks the batch system; a Slurm scheduler cycle is about that long...
LONGEST_POLL_S = 30.0  # ...and at least this often, however long a look takes (10,000 targets: about 1.5 s)


def collect_run(root: Path, clean_up: bool = True, save: bool = True) -> tuple[RunStore, Collected]:
    """Merge the batch tasks' records into the run's manifest.json (`save`), under the run's lock (the manifest
    is read under it: a submission may have written it since). `clean_up`: also kill what dead
    tasks left running here (collect, --resume, --wait; never a command that only reads)."""
    store = RunStore.open(root)
    with store.lock():
        return store, collect(store, load_run(root).manifest, BATCH, clean_up, save)


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


def launches_line(store: RunStore, manifest: Manifest) -> str:
    """'; 530/960 launches profiled by 3 shared runs running' (their logs are on the shared file system), or ''."""
    running = [r for r in manifest.shared_runs if r.status == Status.RUNNING and r.launch_count]
    if not running:
        return ""
    profiled = sum(profiled_in(store.read_log(r.name, 0)) for r in running)
    expected = sum(r.launch_count or 0 for r in running)
    return f"; {profiled:,}/{expected:,} launches profiled by {len(running)} shared run(s) running"


def before_resume(resumed: Resumed) -> Resumed:
    """A run submitted to a batch system: nothing may run while its submissions do, and their records
    come first (the run as collected)."""
    if not resumed.manifest.submissions:
        return resumed
    store, collected = collect_run(resumed.root)
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


@dataclass(frozen=True)
class Waited:
    """A submission followed to its end (or until the wait was stopped): its exit code, the run as collected (its
    own_seconds: the submitter's), the tasks' own seconds summed by phase over `records` records, and what to add."""

    exit_code: int
    manifest: Manifest
    tasks_own: dict[str, float]
    records: int
    notes: tuple[str, ...]


def wait(root: Path, stop: StopRequest, console: Console) -> Waited:
    """Follow the run's submissions until they end: on a terminal, a progress bar of the targets that ended, with
    the counts; otherwise (a log, CI) a line whenever a target changes state. Each look merges the tasks' records in
    memory; it waits twenty times what the last look took (from POLL_S up to LONGEST_POLL_S), so that looking costs
    about a twentieth of the wait at any size; the run is saved once, as it ended."""
    shown, said_at = "", time.monotonic()
    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True, disable=not console.is_terminal,
    )  # fmt: skip
    with bar:
        task = bar.add_task("waiting", total=None)
        while True:
            started = time.monotonic()
            with CLOCK.phase(RECORDS):
                store, collected = collect_run(root, save=False)
            if collected.done or stop.level:
                break
            progress = progress_line(collected.manifest)
            launches = launches_line(store, collected.manifest)
            ended = sum(t.status not in (Status.PENDING, Status.RUNNING) for t in collected.manifest.targets)
            bar.update(task, description=progress + launches, completed=ended, total=len(collected.manifest.targets))
            # on a pipe: a line whenever a target changes state, and the launches at most every LAUNCHES_EVERY_S
            due = launches and time.monotonic() - said_at >= LAUNCHES_EVERY_S
            if (progress != shown or due) and not console.is_terminal:
                console.print(progress + launches, highlight=False, markup=False)
                said_at = time.monotonic()
            shown = progress
            with CLOCK.waiting():  # the tasks' time, not this process's
                stop.sleep(min(LONGEST_POLL_S, max(POLL_S, 20 * (time.monotonic() - started))))
    with CLOCK.phase(RECORDS), store.lock():  # as it ended, with the submitter's own seconds
        collected.manifest.own_seconds = CLOCK.totals()
        store.save_manifest(collected.manifest.model_dump(mode="json"))
    notes = tuple(describe(collected))
    if stop.level:
        print("ncucampaign: stopped waiting; the array goes on (collect it later)", file=sys.stderr)
        code = EXIT_INTERRUPTED
    else:
        ok = all(t.status == Status.OK for t in collected.manifest.targets)
        code = EXIT_OK if ok else EXIT_TARGETS_FAILED
    return Waited(code, collected.manifest, collected.tasks_own, collected.records, notes)


def batch_own_line(submitter: dict[str, float], tasks: dict[str, float], records: int) -> str:
    """'own time: submitter 1.2 s (records 0.6 s, ...); tasks 24.9 s over 6 records (reports 9.2 s, ...)'."""

    def spent(own: dict[str, float]) -> str:
        phases = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in sorted(own.items(), key=lambda kv: -kv[1]))
        return f"{sum(own.values()):.1f} s" + (f" ({phases})" if phases else "")

    return f"own time: submitter {spent(submitter)}; tasks {spent(tasks)} over {records} records"
