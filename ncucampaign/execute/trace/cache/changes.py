"""Which of a workload's files changed since its command's last trace: a key that changes traces again, and a run
that traced again without a word (`run big.yaml > run3.log` in the campaign's folder) left the user guessing. The
workload's stamps are kept beside the cache (workloads/, one file a command and folder); the next key compares
with them. Kept with them: the files earlier runs wrote their own output to there (run2.log, run3.log), which are
no part of the workload in any later run either."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ncucampaign.execute.rundir.cache_files import read_cache_text, write_cache_text

MAX_WORKLOAD_FILE = 8 << 20  # the stamps of up to 10,000 files (workload.py's MAX_FILES)
SHOWN = 5  # files named in the note; the rest counted


def label_of(cwd: Path, argv: tuple[str, ...]) -> str:
    """The name the workload of one command in one folder is kept under."""
    return hashlib.sha256(json.dumps([str(cwd), list(argv)]).encode()).hexdigest()[:24]


def earlier_outputs(folder: Path | None, label: str) -> set[str]:
    """The names (relative to the workload's folder) earlier runs of this command wrote their own output to."""
    kept = _kept(folder, label)
    outputs = kept.get("outputs") if kept is not None else None
    return {name for name in outputs if isinstance(name, str)} if isinstance(outputs, list) else set()


def changed_since(folder: Path | None, label: str, data: dict[str, Any], outputs: set[str]) -> tuple[str, ...]:
    """What differs from the workload kept under `label` (files by name: 'run3.log (changed)'; the commit, the
    uncommitted changes), and keep `data` (with every run's `outputs`) for the next run. () when nothing was kept or
    nothing differs."""
    if folder is None:
        return ()
    before = _kept(folder, label)
    write_cache_text(_path(folder, label), json.dumps({**data, "outputs": sorted(outputs)}, sort_keys=True))
    if before is None:
        return ()
    before.pop("outputs", None)
    return () if before == data else differences(before, data)


def _path(folder: Path, label: str) -> Path:
    return folder / "workloads" / f"{label}.json"


def _kept(folder: Path | None, label: str) -> dict[str, Any] | None:
    if folder is None:
        return None
    text = read_cache_text(_path(folder, label), MAX_WORKLOAD_FILE)
    try:
        kept = json.loads(text) if text else None
    except (ValueError, RecursionError):
        return None
    return kept if isinstance(kept, dict) else None


def differences(before: dict[str, Any], after: dict[str, Any]) -> tuple[str, ...]:
    said = [f"the {what}" for what in ("commit", "changes") if before.get(what) != after.get(what)]
    for kind in ("files", "stamps"):
        old, new = before.get(kind) or {}, after.get(kind) or {}
        if not isinstance(old, dict) or not isinstance(new, dict):
            continue
        for name in sorted(set(old) | set(new)):
            if name not in old:
                said.append(f"{name} (new)")
            elif name not in new:
                said.append(f"{name} (gone)")
            elif old[name] != new[name]:
                said.append(f"{name} (changed)")
    if len(said) > SHOWN:
        said = [*said[:SHOWN], f"and {len(said) - SHOWN} more"]
    return tuple(said)
