"""The run directory's lock: one runner at a time, and a runner's last words where they can still be
written. The lock file holds who holds it, padded to LOCK_BYTES when taken, so that a runner whose disk
filled up can still say so in place (no new block is needed) for the next start to tell (a
full disk left the manifest saying `running`, and nothing said why)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.rundir.guards import writing

LOCK_FILE = ".lock"
LOCK_BYTES = 1024
ENDED = " | ended: "


class RunLock:
    """Held while a runner works in `root` (the kernel drops it when the holder dies, even by SIGKILL)."""

    def __init__(self, root: Path) -> None:
        self.root, self.fd = root, -1

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        path = self.root / LOCK_FILE
        with writing(path):
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise EnvironmentProblem(f"{path} is not a regular file")
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 500, 0).decode("utf-8", "replace").strip() or "another process"
                raise EnvironmentProblem(
                    f"{self.root} is in use by another ncucampaign run ({holder}); wait for it, or stop it first"
                ) from None
            since = time.strftime("%Y-%m-%d %H:%M:%S")
            with writing(path):
                _write_padded(fd, f"pid {os.getpid()} on {socket.gethostname()} since {since}")
            self.fd = fd
            yield
        finally:
            self.fd = -1
            os.close(fd)

    def note_end(self, why: str) -> None:
        """Say in the lock file how this run ended, in place; nothing when even that cannot be written."""
        if self.fd < 0:
            return
        with contextlib.suppress(OSError):
            holder = os.pread(self.fd, LOCK_BYTES, 0).decode("utf-8", "replace").split(ENDED)[0].strip()
            _write_padded(self.fd, f"{holder}{ENDED}{time.strftime('%Y-%m-%d %H:%M:%S')}: {why}")


def _write_padded(fd: int, text: str) -> None:
    data = text.encode("utf-8", "replace")[: LOCK_BYTES - 1] + b"\n"
    os.pwrite(fd, data.ljust(LOCK_BYTES), 0)
    os.fsync(fd)


def last_words(root: Path) -> str | None:
    """How the run in `root` ended, as its runner noted it, when no runner holds it now; None when it
    is held, or nothing was noted."""
    found = _peek(root)
    return None if found is None or found[0] else found[1]


def lock_held(root: Path) -> bool:
    """Whether a runner holds `root` now."""
    found = _peek(root)
    return found is not None and found[0]


def _peek(root: Path) -> tuple[bool, str | None] | None:
    """(held, last words) of the lock file; None when there is none to read."""
    try:
        fd = os.open(root / LOCK_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True, None  # held: that run is still going
        text = os.pread(fd, LOCK_BYTES, 0).decode("utf-8", "replace")
    finally:
        os.close(fd)
    return False, text.split(ENDED, 1)[1].strip() if ENDED in text else None
