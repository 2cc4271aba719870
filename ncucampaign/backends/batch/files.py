"""The files batch tasks share through the run directory, without file locks (Lustre and NFS lack reliable
ones): a task claims a target by creating its claim file exclusively and writes its record by atomic rename;
`collect` merges the records into manifest.json.

    slurm/array-<n>.sbatch, array-<n>.json   each submission's script and its tasks (array.sbatch: the newest)
    slurm/claims/<target>.claim              who runs a target: job, task, node, record file (old/: earlier)
    slurm/tasks/<array job>_<task>.json      a task's own manifest: its targets and shared runs
    slurm/out/<array job>_<task>.out         what the task printed
"""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path

from ncucampaign.errors import EnvironmentProblem, UsageError, first_line, printable
from ncucampaign.execute.rundir.guards import writing
from ncucampaign.execute.rundir.manifest import Manifest, TaskPlacement
from ncucampaign.execute.rundir.reading import RunFileDamaged, read_journaled, read_model
from ncucampaign.execute.rundir.store import RunStore, open_regular
from ncucampaign.execute.rundir.task_list import BATCH

MAX_RECORD_BYTES = 256 << 20


def created(path: Path, text: str) -> bool:
    """Create `path` holding `text`; False when it exists (O_EXCL is atomic on NFS too: a claim of one task)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        return False
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write {path}: {exc.strerror or exc}") from None
    with writing(path), os.fdopen(fd, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())  # on the shared disk before another task looks
    return True


class Claim(TaskPlacement):
    """slurm/claims/<target>.claim: the task that runs a target (where it runs, its record file), its runner's pid,
    and when it claimed it."""

    pid: int | None = None
    claimed_at: str | None = None


def _safe(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def task_stem(array_job: str, task: int) -> str:
    """A task's name where it becomes part of a file name: its record, its output, its shared runs' reports and logs.
    Quoted, as claims are: a Kubernetes Job is "<namespace>/<name>", and its "/" would make a folder."""
    return f"{_safe(array_job)}_{task}"


class BatchFiles:
    def __init__(self, store: RunStore) -> None:
        self.store, self.run = store, store.run

    @property
    def folder(self) -> Path:
        return self.run.inside(BATCH)

    def make_folders(self) -> None:
        for sub in ("", "claims", "claims/old", "tasks", "out"):
            path = self.run.inside(BATCH, sub) if sub else self.folder
            with writing(path):
                path.mkdir(exist_ok=True)

    def claim_path(self, target: str) -> Path:
        return self.run.inside(BATCH, "claims", _safe(target) + ".claim")

    def claim(self, target: str, claim: Claim) -> bool:
        """Create the target's claim; False when another task holds it (O_EXCL is atomic on NFS too)."""
        return created(self.claim_path(target), claim.model_dump_json())

    def read_claim(self, target: str) -> Claim | str | None:
        """The target's claim; why it cannot be read (a task died writing it); None when there is none."""
        path = self.claim_path(target)
        if not os.path.lexists(path):
            return None
        try:
            return read_model(path, Claim, MAX_RECORD_BYTES)
        except RunFileDamaged as exc:
            return exc.why

    def retire_claim(self, target: str, before: str) -> None:
        """Move a claim aside: the target runs again (a new array, or a local --resume), and what its
        old task recorded must no longer be collected over the new result."""
        path = self.claim_path(target)
        if os.path.lexists(path):
            with writing(path):
                os.replace(path, self.run.inside(BATCH, "claims", "old", f"{_safe(target)}.before-{before}.claim"))

    def output_tail(self, array_job: str, task: int) -> str | None:
        """The last line the task printed (slurm/out/<job>_<task>.out), '' when it printed nothing,
        None when there is no such file (Slurm did not start the task, or could not write there)."""
        try:
            fd = open_regular(self.run.inside(BATCH, "out", f"{task_stem(array_job, task)}.out"), os.O_RDONLY)
        except (OSError, EnvironmentProblem):
            return None
        with os.fdopen(fd, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - 4096))
            lines = handle.read().decode(errors="replace").strip().splitlines()
        return printable(lines[-1].strip()) if lines else ""

    def record_path(self, array_job: str, task: int) -> str:
        return f"{BATCH}/tasks/{task_stem(array_job, task)}.json"

    def read_record(self, relative: str) -> Manifest | str:
        """A task's record, or why it cannot be read."""
        try:
            path = self.run.inside(*Path(relative).parts)
        except EnvironmentProblem as exc:
            return str(exc)
        try:
            return read_journaled(path)  # with its journal: a task's book appends its changes there
        except RunFileDamaged as exc:
            return f"{relative} is damaged ({exc.why})" if exc.opened else f"{relative} is missing or unreadable"
        except UsageError as exc:  # its journal
            return f"{relative}: {first_line(exc)}"
