"""What a record written before a field existed says of it, read once where the manifest is read: its recorded ncu
command line holds what its launch count, metrics and sections were; fields named for a batch system before the
manifest named none have their neutral names. Only here is a recorded command line read back; results/ takes the
record's fields."""

from __future__ import annotations

import itertools
from typing import Any

from ncucampaign.execute.rundir.status import kind_of


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
        "launch_count": _count(counts[0]) if counts else None,
        "metrics": metrics,
        "collects_sections": "--metrics" not in argv or bool({"--section", "--set"} & set(argv)),
    }


def _count(word: str) -> int | str:
    """A recorded --launch-count value as ncu would have read it: ASCII digits of a 64-bit count. Anything else
    ('²', which isdigit() calls a digit and int() refuses; 5,000 digits, which int() refuses) is left as written, for
    the model to refuse: the record is damaged (exit 2), not the reader (it raised here: exit 70)."""
    return int(word) if word.isascii() and word.isdigit() and len(word) <= 19 else word


def _values(argv: list[str], flag: str) -> list[str]:
    """The values the command line gives `flag` (`--section A --section B` -> [A, B]), in order."""
    return [value for word, value in itertools.pairwise(argv) if word == flag]


RENAMED = {"slurm_arrays": "submissions", "slurm": "placement"}  # manifests written before 2026-12-05


def renamed(data: Any) -> Any:
    """A manifest or target record with its fields' names of today (an older one: RENAMED)."""
    if not isinstance(data, dict) or not RENAMED.keys() & data.keys():
        return data
    return {RENAMED.get(key, key) if RENAMED.get(key) not in data else key: value for key, value in data.items()}


def upgraded(data: Any) -> Any:
    """A manifest's JSON (or a batch task's record) with what older versions wrote in today's names and fields. The
    reader applies it only to a manifest the models refuse as it is: a before-validator on the models made pydantic
    build every record as Python objects first (20,000 targets: 0.3 s and 320 MB more on every read)."""
    if not isinstance(data, dict):
        return data
    data = renamed(data)
    for key, older in (("targets", _target), ("shared_runs", _shared_run)):
        if isinstance(records := data.get(key), list):
            data = {**data, key: [older(record) for record in records]}
    return data


def _target(record: Any) -> Any:
    return asked_from_argv(renamed(record))


def _shared_run(record: Any) -> Any:
    """Before `kind` existed, a shared run's name said it."""
    record = _target(record)
    if isinstance(record, dict) and "kind" not in record and isinstance(record.get("name"), str):
        return {**record, "kind": kind_of(record["name"])}
    return record
