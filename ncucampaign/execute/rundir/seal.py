"""The seal of a run's campaign record (its source and sha256): an HMAC under a key of this user's, kept in
$XDG_CONFIG_HOME/ncucampaign/seal.key (else ~/.config/...), made on first use, readable by its owner alone. A plain
digest (the seal before) could be recomputed by anyone who could write the run directory, and a forged source then
ran on `run --resume RUN`; this one can be made only with the key (docs/running.md, "What a run directory is
trusted for"). A run made by another user, or on a machine without this key, is resumed by naming its FILE."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
from pathlib import Path

PREFIX = "hmac-sha256:"
KEY_BYTES = 32


def key_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ncucampaign" / "seal.key"


def seal_key(create: bool) -> bytes | None:
    """This user's key; made when `create` and there is none; None when it cannot be had (a read-only home, a key
    file that is a link, another user's, or readable by others)."""
    path = key_path()
    if create and not path.exists():
        with contextlib.suppress(OSError):
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(os.urandom(KEY_BYTES))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
        key = handle.read(KEY_BYTES + 1)
    return key if len(key) == KEY_BYTES else None


def campaign_seal(source: str | None, sha256: str) -> str:
    """The seal a new run records ("" where no key can be had: its resume then needs the FILE named)."""
    key = seal_key(create=True)
    return _sealed(key, source, sha256) if key is not None else ""


def seal_holds(seal: str, source: str | None, sha256: str) -> bool:
    """Whether `seal` is this user's seal of `source` and `sha256` (a plain digest, or none, is not)."""
    key = seal_key(create=False)
    if key is None or not sha256 or not seal.startswith(PREFIX):
        return False
    return hmac.compare_digest(seal, _sealed(key, source, sha256))


def _sealed(key: bytes, source: str | None, sha256: str) -> str:
    return PREFIX + hmac.new(key, f"{source}\0{sha256}".encode(), hashlib.sha256).hexdigest()
