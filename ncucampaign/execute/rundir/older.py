"""What a record written before a field existed says of it, read once where the manifest is read: its recorded ncu
command line holds what its launch count, metrics and sections were; fields named for a batch system before the
manifest named none have their neutral names. Only here is a recorded command line read back; results/ takes the
record's fields."""

from __future__ import annotations

import itertools
from typing import Any


def asked_from_argv(data: Any) -> Any:
    """A record's `launch_count`, `metrics` and `collects_sections` where it predates them (None: it has none)."""
    if not isinstance(data, dict) or "collects_sections" in data:
        return data
    argv = data.get("argv")
    if not isinstance(argv, list) or not all(isinstance(word, str) for word in argv):
        return data  # the model says what is wrong with it
    counts = _values(argv, "--launch-count")
    metrics: list[str] = []
    for value in _values(argv, "--metrics"):
        metrics += [m.strip() for m in value.split(",") if m.strip() and m.strip() not in metrics]
    return {
        **data,
        "launch_count": int(counts[0]) if counts and counts[0].isdigit() else None,
        "metrics": metrics,
        "collects_sections": "--metrics" not in argv or bool({"--section", "--set"} & set(argv)),
    }


def _values(argv: list[str], flag: str) -> list[str]:
    """The values the command line gives `flag` (`--section A --section B` -> [A, B]), in order."""
    return [value for word, value in itertools.pairwise(argv) if word == flag]


RENAMED = {"slurm_arrays": "submissions", "slurm": "placement"}  # manifests written before 2026-12-05


def renamed(data: Any) -> Any:
    """A manifest or target record with its fields' names of today (an older one: RENAMED)."""
    if not isinstance(data, dict) or not RENAMED.keys() & data.keys():
        return data
    return {RENAMED.get(key, key) if RENAMED.get(key) not in data else key: value for key, value in data.items()}
