"""The files of ncucampaign's caches (traces, their costs, what ncu lists), read and written without following
links, so a planted link can neither feed a run nor be overwritten (docs/running.md, "Unattended runs"); a cache
that cannot be read or written is no cache. And what identifies a file: its stamp and digest."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.rundir.store import open_regular, write_text_atomic

MAX_CACHE_FILE = 1 << 20  # a cache file is small JSON; anything larger is not one of ours


def read_cache_text(path: Path, limit: int = MAX_CACHE_FILE) -> str | None:
    """The file's text, or None when it is missing, a link, not a regular file, larger than `limit`
    bytes or unreadable."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except (OSError, EnvironmentProblem):
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        return None
    return data.decode("utf-8", errors="replace")


def write_cache_text(path: Path, text: str) -> bool:
    """Replace the file whole (a link there is refused, never written through); False when it cannot be."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
    except (OSError, EnvironmentProblem):
        return False
    return True


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def stamp_of(path: Path) -> list[int]:
    """What tells a file from another at the same path, or the same one rewritten: device, inode,
    size, modification time (OSError when it cannot be read)."""
    info = os.stat(path)
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns]
