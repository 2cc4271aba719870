"""The run directory, runs/<campaign>/<run-id>/{campaign.yaml, plan.json, manifest.json, reports/, logs/} and
runs/<campaign>/latest, and the one store every write goes through: paths through `RunDir.inside` (a target's
name never writes elsewhere), whole files atomically (temporary, fsync, rename), so a crash keeps the last."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ncucampaign.errors import EnvironmentProblem, UsageError
from ncucampaign.execute.rundir.guards import writing
from ncucampaign.execute.rundir.lock import RunLock
from ncucampaign.execute.rundir.log_text import log_text
from ncucampaign.spec.ncu_versions import REPORT_SUFFIX

LATEST = "latest"
MANIFEST = "manifest.json"
JOURNAL = "manifest.journal"  # its changes since it was last written (execute/rundir/journal.py)


def latest_run(runs_root: Path, campaign: str) -> Path:
    """Where `latest` of a campaign's runs is (a link to the newest run directory)."""
    return runs_root / campaign / LATEST


@dataclass(frozen=True)
class RunDir:
    root: Path
    run_id: str
    report_suffix: str = REPORT_SUFFIX  # the installed ncu's own (spec/ncu_versions.py); readers take both

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    @property
    def runs_root(self) -> Path:
        """Where the campaign's run directories go: a run directory is <runs root>/<campaign>/<run id>."""
        return self.root.parent.parent

    @functools.cached_property
    def _resolved(self) -> Path:  # as first resolved: a folder swapped for a link later is then outside
        return self.root.resolve()

    def inside(self, *parts: str) -> Path:
        """A path under the run directory; refuses anything that would resolve outside it."""
        path = self.root.joinpath(*parts)
        resolved = path.resolve()
        if resolved != self._resolved and self._resolved not in resolved.parents:
            raise EnvironmentProblem(f"{path}: outside the run directory (links followed); neither read nor written")
        return path

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root))

    def report(self, name: str) -> Path:
        return self.inside("reports", name + self.report_suffix)

    def log(self, name: str) -> Path:
        return self.inside("logs", name + ".log")


class RunStore:
    """All writes to one run directory."""

    def __init__(self, run: RunDir) -> None:
        self.run = run
        self._lock = RunLock(run.root)

    @classmethod
    def create(
        cls, runs_root: Path, campaign: str, now: float | None = None, report_suffix: str = REPORT_SUFFIX
    ) -> RunStore:
        """A fresh runs_root/<campaign>/<run-id>/, the id the local start time made unique; absolute, since
        ncu runs in the application's working directory, not in ours."""
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
            store = cls(RunDir(base / run_id, run_id, report_suffix))
            store.make_folders()
            return store
        raise EnvironmentProblem(f"cannot find a free run id under {base}")

    @classmethod
    def open(cls, path: Path, report_suffix: str = REPORT_SUFFIX) -> RunStore:
        """An existing run directory (for --resume); `path` may be a campaign folder's `latest`."""
        root = path.resolve()
        if not (root / MANIFEST).is_file():
            raise UsageError(f"--resume {path}: not a run directory (no {MANIFEST})")
        return cls(RunDir(root, root.name, report_suffix))

    def make_folders(self, sub: str | None = None) -> None:
        """reports/ and logs/ (or their `sub` folders: shared runs keep theirs in reports/shared/)."""
        for folder in (self.run.reports, self.run.logs):
            folder = self.run.inside(folder.name, sub) if sub else folder
            with writing(folder):
                folder.mkdir(exist_ok=True)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run directory for one runner (execute/rundir/lock.py). The lock file is never followed through a
        link (a run directory unpacked from someone else's archive could point it anywhere)."""
        with self._lock.held():
            yield

    def note_end(self, why: str) -> None:
        """How this run ended, where the next start finds it even when the manifest could not be saved."""
        self._lock.note_end(why)

    def check_contents(self) -> None:
        """Before a resume writes anything: every entry it may write is a regular file or folder (shared runs write into
        reports/shared/ and logs/shared/ too). Temporary files a killed runner left mid-write are removed."""
        folders = [self.run.root, self.run.reports, self.run.logs]
        folders += [folder / SHARED_FOLDER for folder in (self.run.reports, self.run.logs)]
        odd = [
            entry
            for folder in folders
            if folder.is_dir() and not folder.is_symlink()
            for entry in folder.iterdir()
            if entry.is_symlink() or not (entry.is_file() or entry.is_dir())
        ]
        odd += [folder for folder in folders[1:] if folder.is_symlink()]
        if odd:
            listed = ", ".join(str(path) for path in sorted(odd)[:5])
            raise EnvironmentProblem(
                f"{self.run.root} holds symbolic links or special files ({listed}); refusing to write into it"
            )
        for leftover in self.run.root.glob(".*.tmp"):  # write_text_atomic's, never renamed into place
            with contextlib.suppress(OSError):
                leftover.unlink()

    def write_text(self, name: str, text: str) -> Path:
        """A whole file in the run directory (campaign.yaml, kernels.json, report.html, ...), atomically."""
        path = self.run.inside(name)
        write_text_atomic(path, text)
        return path

    def write_json(self, name: str, data: Any) -> Path:
        return self.write_text(name, json.dumps(data, indent=2, sort_keys=False) + "\n")

    def save_manifest(self, data: Any) -> None:
        """The whole manifest, and its journal emptied: what the journal held is in it (execute/rundir/journal.py)."""
        self.write_json(MANIFEST, data)
        journal = self.run.inside(JOURNAL)
        with writing(journal), contextlib.suppress(FileNotFoundError):
            fd = open_regular(journal, os.O_WRONLY)
            try:
                os.ftruncate(fd, 0)
            finally:
                os.close(fd)

    def point_latest(self, target: str | None = None) -> None:
        """runs/<campaign>/latest -> <run-id> (or `target`), replaced atomically. Where the file system
        has no symbolic links there is no `latest`: name the run directory instead."""
        link = self.run.root.parent / LATEST
        temporary = self.run.root.parent / f".{LATEST}.{os.getpid()}"
        with contextlib.suppress(OSError):
            if temporary.is_symlink():
                temporary.unlink()
            temporary.symlink_to(target or self.run.run_id, target_is_directory=True)
            os.replace(temporary, link)

    def withdraw(self, previous_latest: str | None) -> None:
        """A fresh run that never ran anything (its submission was refused): its folder removed, and
        `latest` pointing where it did before (or gone, when there was none)."""
        link = self.run.root.parent / LATEST
        if previous_latest is not None:
            self.point_latest(previous_latest)
        elif link.is_symlink() and os.readlink(link) == self.run.run_id:
            with contextlib.suppress(OSError):
                link.unlink()
        shutil.rmtree(self.run.root, ignore_errors=True)

    def append_log(self, name: str, text: str) -> int:
        """Add lines to a target's log; returns the offset after them (where the attempt's output starts)."""
        path = self.run.log(name)
        with writing(path), os.fdopen(open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a") as log:
            log.write(text)
            log.flush()
            return log.tell()

    def read_log(self, name: str, offset: int) -> str:
        if not os.path.lexists(path := self.run.log(name)):  # never written: an attempt a stop kept from starting
            return ""
        with writing(path), os.fdopen(open_regular(path, os.O_RDONLY), "rb") as log:
            return log_text(log, offset)

    def keep_report(self, name: str, number: int) -> str | None:
        """Move reports/<name>.ncu-rep aside as <name>.attempt-N.ncu-rep before the next attempt writes it; returns
        the kept report's relative path, or None when there is none. With N 0 no record names it: removed."""
        report = self.run.report(name)
        if report.is_symlink():  # ncu -f would write through it
            raise EnvironmentProblem(f"{report} is a symbolic link; refusing to let ncu write through it")
        _refuse_odd(report)  # a FIFO would stall ncu's write, a folder fail every attempt
        if not report.is_file():
            return None
        if number == 0:  # what an attempt killed with its runner left (a trace's was 55 MB)
            report.unlink()
            return None
        kept = self.run.inside("reports", f"{name}.attempt-{number}{report.suffix}")
        with writing(kept):
            _refuse_odd(kept)
            report.replace(kept)
        return self.run.relative(kept)


_UMASK = os.umask(0o22)
os.umask(_UMASK)  # (read back as it was)
_FILE_MODE = 0o666 & ~_UMASK  # what open() would give; mkstemp alone gives 0600


def _refuse_odd(path: Path) -> None:
    """Only a regular file (or nothing) may be replaced: never a link, folder, device or pipe."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        kind = "a symbolic link" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise EnvironmentProblem(f"refusing to replace {path}: it is {kind}")


def open_regular(path: Path, flags: int) -> int:
    """os.open that never follows a final symbolic link and opens regular files only (a FIFO would block)."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise EnvironmentProblem(f"{path} is not a regular file")
    os.set_blocking(fd, True)
    return fd


SHARED_FOLDER = "shared"  # reports/shared/ and logs/shared/: shared runs and traces


def write_text_atomic(path: Path, text: str) -> None:
    """Write a whole file: temporary file, fsync, rename. Refuses to replace anything but a regular file."""
    _refuse_odd(path)
    with writing(path):
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:64]}.", suffix=".tmp")
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
