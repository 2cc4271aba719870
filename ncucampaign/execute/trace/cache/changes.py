"""Which of a workload's files changed since its command's last trace: a key that changes traces again, and a run
that traced again without a word (`run big.yaml > run3.log` in the campaign's folder) left the user guessing. The
workload's stamps are kept beside the cache, one file a command and folder; the next key compares with them."""

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


def changed_since(folder: Path | None, label: str, data: dict[str, Any]) -> tuple[str, ...]:
    """What differs from the workload kept under `label` (files by name: 'run3.log (changed)'; the commit, the
    uncommitted changes), and keep `data` for the next run. () when nothing was kept or nothing differs."""
    if folder is None:
        return ()
    path = folder / f"workload-{label}.json"
    text = read_cache_text(path, MAX_WORKLOAD_FILE)
    try:
        before = json.loads(text) if text else None
    except (ValueError, RecursionError):
        before = None
    write_cache_text(path, json.dumps(data, sort_keys=True))
    if not isinstance(before, dict) or before == data:
        return ()
    return differences(before, data)


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
