"""manifest.json's journal (`manifest.journal`, beside it): a run's changes, a line each, appended as they are made,
so that a change costs what it changed, not the whole manifest again. manifest.json is rewritten from memory at
most about once a second (less often as it grows: rewriting never takes over a tenth of the run) and at the end,
and the journal is emptied after each rewrite. A change is one write() of whole lines: a killed runner leaves
every change it made in the file system (synced to the disk about once a second; a torn last line, from a full
disk, is ignored). A line holds a whole record (a target's, a shared run's) or the manifest's own fields, so
readers apply the lines in order over manifest.json, and applying a line twice changes nothing (a runner killed
between a rewrite and the emptying left both)."""

from __future__ import annotations

import errno
import json
import os
import shlex
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ncucampaign.errors import UsageError, printable
from ncucampaign.execute.rundir.guards import writing
from ncucampaign.execute.rundir.limits import manifest_limit, too_large
from ncucampaign.execute.rundir.manifest import Manifest, SharedRunRecord, TargetRecord
from ncucampaign.execute.rundir.store import JOURNAL, MANIFEST, RunStore, open_regular, write_text_atomic

REWRITE_S = 1.0  # manifest.json is rewritten at most about this often...
REWRITE_SHARE = 0.1  # ...and only when the last rewrite took at most this share of the time since
SYNC_S = 1.0  # the journal reaches the disk at least this often
_OWN = ("targets", "shared_runs")  # what the manifest's own line leaves out


def entry_of(record: TargetRecord | Manifest, manifest: Manifest) -> dict[str, Any]:
    """One journal line's value: a target's whole record (by name), a shared run's (by its place in the list: a
    resumed run may hold two of one name), or the manifest's own fields."""
    if isinstance(record, SharedRunRecord):
        at = next(i for i, known in enumerate(manifest.shared_runs) if known is record)
        return {"shared_run": record.model_dump(mode="json"), "at": at}
    if isinstance(record, TargetRecord):
        return {"target": record.model_dump(mode="json")}
    return {"manifest": record.model_dump(mode="json", exclude=set(_OWN))}


def replayed(data: dict[str, Any], entries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The manifest's JSON with the journal's lines applied, in order (each replaces what it names). A line that
    fits nothing (a forged journal) is left out: the model's validation then says what is wrong."""
    targets, runs = data.get("targets"), data.get("shared_runs")
    by_name = {_name(t): i for i, t in enumerate(targets)} if isinstance(targets, list) else {}
    for change in entries:
        if not isinstance(change, dict):
            continue
        if isinstance(change.get("manifest"), dict):
            data.update({k: v for k, v in change["manifest"].items() if k not in _OWN})
        target = change.get("target")
        if isinstance(target, dict) and isinstance(targets, list) and _name(target) is not None:
            where = by_name.setdefault(_name(target), len(targets))
            targets[where : where + 1] = [target]
        at = change.get("at")
        run = change.get("shared_run")
        if isinstance(run, dict) and isinstance(runs, list) and isinstance(at, int) and 0 <= at <= len(runs):
            runs[at : at + 1] = [run]
    return data


def _name(record: object) -> str | None:
    name = record.get("name") if isinstance(record, dict) else None
    return name if isinstance(name, str) else None


def journal_of(record: Path) -> Path:
    """The journal beside a record file: manifest.json's is manifest.journal, a batch task's <task>.journal."""
    return record.with_suffix(".journal")


def journal_entries(root: Path) -> list[dict[str, Any]]:
    """The run's journal lines (none when there is no journal); a torn last line is left out."""
    return journal_lines(root / JOURNAL)


def journal_lines(path: Path) -> list[dict[str, Any]]:
    """A journal's lines (none when there is none); a torn last line is left out."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UsageError(f"{path}: unreadable: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        size, limit = os.fstat(handle.fileno()).st_size, manifest_limit()
        if size > limit:
            raise UsageError(f"{path}: {too_large(size, limit)}")
        lines = handle.read().split(b"\n")
    entries = []
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except (ValueError, RecursionError):  # RecursionError: a line nested 100,000 deep
            if number < len(lines) - 2:  # a torn line may only be the last
                raise UsageError(_damaged(path, number + 1)) from None
    return entries


def _damaged(path: Path, line: int) -> str:
    """A damaged line before the last is no torn write (a stop tears the last line only): the file was edited or
    the disk lost a block. The lines before it hold what was recorded up to there; the way back to them."""
    kept, quoted = shlex.quote(f"{path}.damaged"), shlex.quote(str(path))
    return (
        f"{printable(str(path))}: line {line} is damaged (a stop tears only the last line: this one was edited or lost "
        f"on disk); the {line - 1} line(s) before it are whole. To go on from them, keep a copy and cut the file "
        f"there:\n  mv {printable(quoted)} {printable(kept)} && head -n {line - 1} {printable(kept)} > "
        f"{printable(quoted)}\nthen `ncucampaign run --resume` runs again what the lines after it had recorded"
    )


class ManifestFiles:
    """Where a book writes: changes to the journal, the whole manifest to its JSON file (manifest.json, or a batch
    task's record `name`, its journal beside it)."""

    def __init__(self, store: RunStore, name: str = MANIFEST) -> None:
        self._manifest = store.run.inside(*Path(name).parts)
        self._path = journal_of(self._manifest)  # manifest.json's: manifest.journal
        self._fd: int | None = None
        self.pending = False  # changes appended since manifest.json was last written
        self._rewritten = self._synced = time.monotonic()
        self._rewrite_took = 0.0

    def append(self, entries: Iterable[dict[str, Any]]) -> None:
        text = "".join(json.dumps(entry, separators=(",", ":")) + "\n" for entry in entries).encode()
        with writing(self._path):
            if self._fd is None:
                self._fd = open_regular(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            self.pending = True
            size = os.fstat(self._fd).st_size
            try:
                if os.write(self._fd, text) != len(text):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            except OSError:
                os.ftruncate(self._fd, size)  # the disk filled mid-line: the journal keeps whole lines only
                raise
            if time.monotonic() - self._synced >= SYNC_S:
                os.fsync(self._fd)
                self._synced = time.monotonic()

    def rewrite_due(self) -> bool:
        since = time.monotonic() - self._rewritten
        return since >= REWRITE_S and self._rewrite_took <= REWRITE_SHARE * since

    def rewrite(self, text: str) -> None:
        """manifest.json, atomically, then the journal emptied (what it held is in the manifest now)."""
        started = time.monotonic()
        write_text_atomic(self._manifest, text + "\n")
        with writing(self._path):
            if self._fd is None and self._path.exists():
                self._fd = open_regular(self._path, os.O_WRONLY | os.O_APPEND)
            if self._fd is not None:
                os.ftruncate(self._fd, 0)
        self.pending = False
        self._rewritten = self._synced = time.monotonic()
        self._rewrite_took = self._rewritten - started

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
