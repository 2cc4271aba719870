"""The run directory: runs/<campaign>/<run-id>/{campaign.yaml, plan.json, manifest.json, reports/, logs/}.

Every path inside it goes through `RunDir.inside`, so a target name can never write elsewhere, and
every JSON file is written atomically (temporary file, fsync, rename): a crash leaves the previous
complete version, never half a file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ncucampaign.errors import EnvironmentProblem, UsageError

LATEST = "latest"


@dataclass(frozen=True)
class RunDir:
    root: Path
    run_id: str

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    def inside(self, *parts: str) -> Path:
        """A path under the run directory; refuses anything that would resolve outside it."""
        path = self.root.joinpath(*parts)
        resolved = path.resolve()
        if resolved != self.root.resolve() and self.root.resolve() not in resolved.parents:
            raise EnvironmentProblem(f"refusing to write outside the run directory: {path}")
        return path

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root))


def create_run_dir(runs_root: Path, campaign: str, now: float | None = None) -> RunDir:
    """Make a fresh runs_root/<campaign>/<run-id>/; the id is the local start time, made unique.

    The path is absolute: ncu runs in the application's working directory, not in ours.
    """
    base = runs_root.absolute() / campaign
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot create the run directory under {base}: {exc.strerror}") from None
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    for suffix in range(1000):
        run_id = stamp if suffix == 0 else f"{stamp}-{suffix}"
        try:
            (base / run_id).mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise EnvironmentProblem(f"cannot create {base / run_id}: {exc.strerror}") from None
        run = RunDir(base / run_id, run_id)
        run.reports.mkdir()
        run.logs.mkdir()
        return run
    raise EnvironmentProblem(f"cannot find a free run id under {base}")


def point_latest(run: RunDir) -> None:
    """runs/<campaign>/latest -> <run-id>, replaced atomically."""
    link = run.root.parent / LATEST
    temporary = run.root.parent / f".{LATEST}.{os.getpid()}"
    try:
        if temporary.is_symlink():
            temporary.unlink()
        temporary.symlink_to(run.run_id, target_is_directory=True)
        os.replace(temporary, link)
    except OSError:  # file systems without symlinks: a text file naming the run
        write_text_atomic(run.root.parent / f"{LATEST}.txt", run.run_id + "\n")


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


_FILE_MODE = 0o666 & ~_umask()  # what open() would give; mkstemp alone gives 0600


def write_text_atomic(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fchmod(out.fileno(), _FILE_MODE)
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


LOCK_FILE = ".lock"


@contextlib.contextmanager
def locked(run: RunDir) -> Iterator[None]:
    """Hold the run directory for one runner. The kernel drops the lock when the holder dies (even by
    SIGKILL), so a crashed run never blocks its resume."""
    path = run.root / LOCK_FILE
    handle = open(path, "a+")  # noqa: SIM115 - held open for the whole run
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise EnvironmentProblem(
                f"{run.root} is in use by another ncucampaign run ({holder}); wait for it, or stop it first"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        handle.flush()
        yield
    finally:
        handle.close()


def open_run_dir(path: Path) -> RunDir:
    """An existing run directory (for --resume); `path` may be a campaign folder's `latest`."""
    root = path.resolve()
    if not (root / "manifest.json").is_file():
        raise UsageError(f"--resume {path}: not a run directory (no manifest.json)")
    run = RunDir(root, root.name)
    run.reports.mkdir(exist_ok=True)
    run.logs.mkdir(exist_ok=True)
    return run
