"""Reading a run directory's files into their models, one way for every reader: bounded in size, never through a
link, validated once, and damage said in the same words everywhere (`RunFileDamaged`, a usage error: exit 2).
manifest.json is read only here (`read_manifest`, its journal applied), by summarize and its kin, by run for the
campaign's latest run and for a resume, and by a batch collect for each task's record."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ncucampaign.errors import EnvironmentProblem, UsageError, first_line, printable
from ncucampaign.execute.rundir.guards import collector_paused
from ncucampaign.execute.rundir.journal import journal_lines, journal_of, replayed
from ncucampaign.execute.rundir.limits import manifest_limit, too_large
from ncucampaign.execute.rundir.manifest import MANIFEST_VERSION, Manifest
from ncucampaign.execute.rundir.older import upgraded
from ncucampaign.execute.rundir.store import MANIFEST, open_regular

Model = TypeVar("Model", bound=BaseModel)


class RunFileDamaged(UsageError):
    """A run-directory file that is missing, a link, too large, not JSON or not its model: `why` says which."""

    def __init__(self, path: Path, why: str, opened: bool = True) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why
        self.opened = opened  # False: missing, a link, or not to be opened; True: its content is no such file


def read_bytes(path: Path, limit: int) -> bytes:
    """The file's bytes, at most `limit`; never through a final link, never a FIFO or a folder."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        raise RunFileDamaged(path, "missing", opened=False) from None
    except (OSError, EnvironmentProblem) as exc:  # ELOOP: a link, which O_NOFOLLOW does not follow
        odd = isinstance(exc, EnvironmentProblem) or getattr(exc, "errno", None) == errno.ELOOP
        why = "a link or not a regular file" if odd else first_line(exc)
        raise RunFileDamaged(path, f"unreadable ({why})", opened=False) from None
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:  # refused before it fills memory
            raise RunFileDamaged(path, too_large(size, limit))
        return handle.read(limit + 1)


def read_json(path: Path, limit: int) -> Any:
    """The file's JSON (a RunFileDamaged when there is none)."""
    return read_json_bytes(path, read_bytes(path, limit))


def validated(path: Path, data: Any, model: type[Model]) -> Model:
    """`data` as `model`, or a RunFileDamaged naming the first key that does not validate."""
    try:
        with collector_paused():
            return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"])
        raise RunFileDamaged(path, f"not a valid {path.name}: {printable(where)}: {error['msg']}") from None
    except RecursionError:
        raise RunFileDamaged(path, f"not a valid {path.name}: nested too deeply") from None


def read_model(path: Path, model: type[Model], limit: int) -> Model:
    """A run-directory file as its model."""
    return validated(path, read_json(path, limit), model)


def read_manifest(root: Path) -> Manifest:
    """A run directory's manifest with its journal's changes (a run going on, or one whose runner was killed),
    read as one state: again when the manifest was rewritten meanwhile (a rewrite empties the journal)."""
    return read_journaled(root / MANIFEST)


def read_journaled(path: Path) -> Manifest:
    """A manifest or a batch task's record (its own manifest), with the journal beside it applied."""
    for _ in range(5):
        before = _stamp(path)
        raw = read_bytes(path, manifest_limit())
        changes = journal_lines(journal_of(path))
        if _stamp(path) == before:
            break
    if not changes:
        try:  # the common case in one pass (parsing and validating apart took 20% longer)
            with collector_paused():
                return Manifest.model_validate_json(raw)
        except ValidationError:  # said below, in words that name the problem
            pass
    data = read_json_bytes(path, raw)
    version = data.get("manifest_version") if isinstance(data, dict) else None
    if version != MANIFEST_VERSION:
        raise RunFileDamaged(path, f"manifest_version {version!r}; this ncucampaign reads {MANIFEST_VERSION}")
    return manifest_of(path, replayed(data, changes) if changes else data)


def manifest_of(path: Path, data: Any) -> Manifest:
    """A manifest's (or a batch task's record's) JSON as the model, written by this version or an older one."""
    return validated(path, upgraded(data), Manifest)


def read_json_bytes(path: Path, raw: bytes) -> Any:
    try:
        with collector_paused():  # millions of containers and no cycle in a large run's files
            return json.loads(raw)
    except (ValueError, RecursionError) as exc:  # ValueError: JSON, UTF-8, integers of 4300+ digits
        raise RunFileDamaged(path, f"not JSON: {first_line(exc) or type(exc).__name__}") from None


def _stamp(path: Path) -> tuple[int, ...] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns
