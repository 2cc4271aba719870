"""Merge what Slurm array tasks recorded into the run's manifest.json, in plan order.

A target's record comes from the task that holds its claim: the task copied the target's earlier
attempts when it started, so a record replaces the manifest's one (never adds to it) and nothing is
counted twice. A claim whose task is no longer queued or running, with no finished record, is a task
that died (node failure, `scancel` without `-b`, the time limit): reported as such; `--resume` reruns it.
Reading a run collects without touching processes; `collect` and `--resume` also clean up after the
dead tasks (`clean_up`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ncucampaign.execute.k8s.api import active_jobs as active_k8s_jobs
from ncucampaign.execute.process.groups import kill_orphaned_group
from ncucampaign.execute.rundir.book import now_iso
from ncucampaign.execute.rundir.manifest import Manifest, SharedRunRecord, SlurmArray, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.slurm.files import SLURM, SlurmFiles
from ncucampaign.execute.slurm.queue import active_jobs

UNFINISHED = (Status.PENDING, Status.RUNNING)


@dataclass
class Collected:
    manifest: Manifest
    active: set[str] = field(default_factory=set)  # array jobs still queued or running
    queue_known: bool = True  # False: squeue could not say; unfinished tasks are taken as running
    problems: list[str] = field(default_factory=list)  # records that could not be read

    @property
    def done(self) -> bool:
        return not self.active


def collect(store: RunStore, manifest: Manifest, clean_up: bool, save: bool = True) -> Collected:
    """Merge the tasks' records into `manifest` and (with `save`) save it. `clean_up`: also kill the
    ncu process groups that dead tasks left on this machine. A run that is only being read is
    neither saved nor cleaned up after (issue 42: reading a batch run rewrote its manifest)."""
    files = SlurmFiles(store)
    jobs = [a.job_id for a in manifest.slurm_arrays if a.job_id]
    active = active_arrays(manifest.slurm_arrays)
    result = Collected(manifest, active if active is not None else set(jobs), queue_known=active is not None)
    records: dict[str, Manifest | str] = {}
    shared: dict[str, SharedRunRecord] = {r.name: r for r in manifest.shared_runs}
    for position, record in enumerate(manifest.targets):
        claim = files.read_claim(record.name)
        if claim is None:
            continue
        where = str(claim.get("record", ""))
        if where not in records:
            records[where] = files.read_record(where) if where else "its claim cannot be read"
        task = records[where]
        found = _find(task, record.name) if isinstance(task, Manifest) else None
        if isinstance(task, Manifest):
            shared.update({r.name: r for r in task.shared_runs})
        elif task not in result.problems:
            result.problems.append(f"{record.name}: {task}")
        merged = found if found is not None else record
        if merged.status in UNFINISHED and str(claim.get("array_job_id")) not in result.active:
            merged = died(merged, claim, str(store.run.root) if clean_up else None)
        manifest.targets[position] = merged
    manifest.shared_runs = list(shared.values())
    if result.queue_known:
        _never_claimed(manifest, files, result.active)
    if manifest.state in ("submitted", "running") and result.done and result.queue_known:
        manifest.state = "finished"
        manifest.ended_at = manifest.ended_at or now_iso()
    if save:
        store.save_manifest(manifest.model_dump(mode="json"))
    return result


def active_arrays(arrays: list[SlurmArray]) -> set[str] | None:
    """Which of the run's arrays still run: Slurm's by squeue, Kubernetes Jobs by the API; None when
    either cannot say."""
    found: set[str] = set()
    for backend, ask in (("slurm", active_jobs), ("kubernetes", active_k8s_jobs)):
        ids = [a.job_id for a in arrays if a.job_id and a.backend == backend]
        if ids:
            answer = ask(ids)
            if answer is None:
                return None
            found |= answer
    return found


def task_words(backend: object, job: object, index: object, node: object = None) -> tuple[str, str]:
    """How a task is named in a message, and the flag that resubmits: 'its Slurm task (job 42, task 3
    on n1)', or 'its pod (Job ns/name, index 3 on n1)'."""
    where = f" on {node}" if node else ""
    if backend == "kubernetes":
        return f"its pod (Job {job}, index {index}{where})", "--k8s"
    return f"its Slurm task (job {job}, task {index}{where})", "--slurm"


def _never_claimed(manifest: Manifest, files: SlurmFiles, active: set[str]) -> None:
    """Targets still pending whose array ended without any task claiming them: the task died before
    it claimed (it could not start, its Python failed, the node failed): said, with the last line the
    task printed, instead of a finished run of pending targets and no word why."""
    placed: dict[str, tuple[str, int, str]] = {}
    for array in manifest.slurm_arrays:  # oldest first: the newest array that lists a target runs it
        for index, names in enumerate(array.tasks):
            placed.update({name: (array.job_id, index, array.backend) for name in names if array.job_id})
    for position, record in enumerate(manifest.targets):
        job, index, backend = placed.get(record.name, ("", 0, "slurm"))
        if record.status != Status.PENDING or not job or job in active or files.read_claim(record.name) is not None:
            continue
        if backend == "kubernetes":  # a pod's output is the cluster's (kubectl logs), not a file here
            said = f"kubectl logs -n {job.replace('/', ' job/')} shows what it printed"
        else:
            said = _what_it_printed(files.output_tail(job, index), f"{SLURM}/out/{job}_{index}.out")
        record = record.model_copy(deep=True)
        record.status = Status.INTERRUPTED
        task, flag = task_words(backend, job, index)
        record.message = f"{task} ended without claiming it; {said}. run --resume RUN_DIR {flag} reruns it"
        manifest.targets[position] = record


def _what_it_printed(last_line: str | None, output: str) -> str:
    if last_line is None:
        return f"it left no output ({output}): Slurm could not start it or write its output"
    return f"it printed: {last_line}" if last_line else "it printed nothing"


def _find(task: Manifest, name: str) -> TargetRecord | None:
    return next((r for r in task.targets if r.name == name), None)


def died(record: TargetRecord, claim: dict[str, object], run_root: str | None) -> TargetRecord:
    """`run_root`: where to look for processes the task left (None: leave processes alone)."""
    record = record.model_copy(deep=True)
    task, flag = task_words(
        claim.get("backend", "slurm"), claim.get("array_job_id", "?"), claim.get("array_task_id", "?"),
        claim.get("node", "?"),
    )  # fmt: skip
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
    why = "node failure, scancel without -b, or the time limit" if flag == "--slurm" else "killed, evicted or lost"
    record.message = f"{task} ended without finishing it: {why}; run --resume RUN_DIR {flag} reruns it"
    return record
