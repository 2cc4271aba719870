"""Merge what batch tasks (Slurm array tasks, pods) recorded into the manifest, in plan order. A target's record
comes from the task holding its claim, which copied its earlier attempts, so it replaces the manifest's and
nothing counts twice. A claim whose task is gone with no record is a dead task (its system's `lost_because`),
rerun by `--resume`; `collect` and `--resume` clean up after it. The systems are handed in, never imported."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ncucampaign.backends.batch.files import BatchFiles, Claim
from ncucampaign.backends.batch.pools import first_tasks
from ncucampaign.backends.contract import BatchSystem
from ncucampaign.execute.process.groups import kill_orphaned_group
from ncucampaign.execute.rundir.book import now_iso
from ncucampaign.execute.rundir.manifest import (
    BACKEND_OF_OLDER,
    Manifest,
    SharedRunRecord,
    Submission,
    TargetRecord,
    TaskPlacement,
)
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunStore

UNFINISHED = (Status.PENDING, Status.RUNNING)


@dataclass
class Collected:
    manifest: Manifest
    active: set[str] = field(default_factory=set)  # array jobs still queued or running
    queue_known: bool = True  # False: squeue could not say; unfinished tasks are taken as running
    problems: list[str] = field(default_factory=list)  # records that could not be read
    tasks_own: dict[str, float] = field(default_factory=dict)  # the tasks' own seconds by phase, summed over...
    records: int = 0  # ...this many records read

    @property
    def done(self) -> bool:
        return not self.active


Systems = Mapping[str, BatchSystem[Any]]  # by the manifest's `backend`


def collect(store: RunStore, manifest: Manifest, systems: Systems, clean_up: bool, save: bool = True) -> Collected:
    """Merge the tasks' records into `manifest`, saved with `save`; `clean_up`: also kill the ncu process groups
    dead tasks left here. A run only being read is neither saved nor cleaned (reading once rewrote a manifest)."""
    files = BatchFiles(store)
    jobs = [a.job_id for a in manifest.submissions if a.job_id]
    active = active_arrays(manifest.submissions, systems)
    result = Collected(manifest, active if active is not None else set(jobs), queue_known=active is not None)
    records: dict[str, Manifest | str] = {}
    by_name: dict[str, dict[str, TargetRecord]] = {}  # each record's targets by name: linear in the targets
    shared: dict[str, SharedRunRecord] = {r.name: r for r in manifest.shared_runs}
    for position, record in enumerate(manifest.targets):
        claim = files.read_claim(record.name)
        if claim is None:
            continue
        where = claim.record if isinstance(claim, Claim) else ""
        if where not in records:
            records[where] = files.read_record(where) if where else "its claim cannot be read"
            task = records[where]
            if isinstance(task, Manifest):
                by_name[where] = {r.name: r for r in task.targets}
                shared.update({r.name: r for r in task.shared_runs})
                _count_own(result, task)
        task = records[where]
        found = by_name.get(where, {}).get(record.name)
        if not isinstance(task, Manifest) and task not in result.problems:
            result.problems.append(f"{record.name}: {task}")
        merged = found if found is not None else record
        placed = claim if isinstance(claim, Claim) else None  # a claim a dying task left unwritten says nothing
        if merged.status in UNFINISHED and (placed is None or placed.array_job_id not in result.active):
            system = system_of(systems, placed.backend if placed else None)
            merged = died(merged, placed, system, str(store.run.root) if clean_up else None)
        manifest.targets[position] = merged
    _first_tasks(store, files, records, shared, result)
    manifest.shared_runs = list(shared.values())
    if result.queue_known:
        _never_claimed(manifest, files, result.active, systems)
    if manifest.state in ("submitted", "running") and result.done and result.queue_known:
        manifest.state = "finished"
        manifest.ended_at = manifest.ended_at or now_iso()
    if save:
        store.save_manifest(manifest.model_dump(mode="json"))
    return result


def _first_tasks(
    store: RunStore,
    files: BatchFiles,
    records: dict[str, Manifest | str],
    shared: dict[str, SharedRunRecord],
    result: Collected,
) -> None:
    """The records of the pools' first tasks not read yet: each holds its pool's trace, though the second stage
    claimed all its targets again."""
    for where in first_tasks(store):
        if where not in records:
            records[where] = task = files.read_record(where)
            if isinstance(task, Manifest):
                shared.update({r.name: r for r in task.shared_runs})
                _count_own(result, task)


def _count_own(result: Collected, task: Manifest) -> None:
    result.records += 1
    for phase, seconds in (task.own_seconds or {}).items():
        result.tasks_own[phase] = result.tasks_own.get(phase, 0.0) + seconds


def system_of(systems: Systems, backend: object) -> BatchSystem[Any]:
    """The system a record names; one naming none (or none known) is the first one."""
    return systems.get(str(backend)) or next(iter(systems.values()))


def active_arrays(arrays: list[Submission], systems: Systems) -> set[str] | None:
    """Which of the run's submissions still run, each system asked of its own; None when one cannot say."""
    found: set[str] = set()
    for backend, system in systems.items():
        ids = [a.job_id for a in arrays if a.job_id and a.backend == backend]
        if ids:
            answer = system.active_jobs(ids)
            if answer is None:
                return None
            found |= answer
    return found


def _never_claimed(manifest: Manifest, files: BatchFiles, active: set[str], systems: Systems) -> None:
    """Pending targets of an ended array that no task claimed (it could not start, its Python failed, the node
    failed), said with the task's last line, instead of a finished run of pending targets and no word why."""
    placed: dict[str, tuple[str, int, str]] = {}
    for array in manifest.submissions:  # oldest first: the newest array that lists a target runs it
        for index, names in enumerate(array.tasks):
            placed.update({name: (array.job_id, index, array.backend) for name in names if array.job_id})
    for position, record in enumerate(manifest.targets):
        job, index, backend = placed.get(record.name, ("", 0, BACKEND_OF_OLDER))
        if record.status != Status.PENDING or not job or job in active or files.read_claim(record.name) is not None:
            continue
        system = system_of(systems, backend)
        said = system.what_it_printed(job, index, files.output_tail(job, index))
        record = record.model_copy(deep=True)
        record.status = Status.INTERRUPTED
        task = system.words.task_words(job, index)
        record.message = f"{task} ended without claiming it; {said}. run --resume RUN_DIR {system.words.flag} reruns it"
        manifest.targets[position] = record


def died(
    record: TargetRecord, where: TaskPlacement | None, system: BatchSystem[Any], run_root: str | None
) -> TargetRecord:
    """`record` as its task (placed `where`, of `system`; None: its claim cannot be read) left it when it died.
    `run_root`: where to look for processes the task left (None: leave processes alone)."""
    record = record.model_copy(deep=True)
    task = system.words.task_words(*((where.array_job_id, where.array_task_id, where.node) if where else "???"))
    for attempt in record.attempts:
        if attempt.ended_at is None:
            # ncu runs in a session of its own and can outlive its dead runner where Slurm tracks
            # processes by parent (proctrack/linuxproc): kill it when it is here and this run's.
            killed = kill_orphaned_group(attempt.process_group, run_root) if attempt.process_group and run_root else 0
            attempt.ended_at = now_iso()
            attempt.status = Status.INTERRUPTED
            attempt.message = f"{task.split(' (')[0]} ended during this attempt" + (
                f"; {killed} process(es) it left were killed" if killed else ""
            )
    record.status = Status.INTERRUPTED
    words = system.words
    rerun = f"run --resume RUN_DIR {words.flag} reruns it"
    record.message = f"{task} ended without finishing it: {words.lost_because}; {rerun}"
    return record
