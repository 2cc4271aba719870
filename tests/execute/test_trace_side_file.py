"""What the trace cache keeps beside a trace is one model (execute/trace/cache/side_file.py): a value that does not read as
its field is no value, and it costs no other field; a file that is no object is nothing kept. Likewise the misses
kept beside it (execute/trace/cache/kept_misses.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ncucampaign.execute.trace.cache.kept_misses import KEPT_MISSES, KeptMisses, kept_miss, miss_key
from ncucampaign.execute.trace.cache.side_file import TraceSide
from ncucampaign.execute.trace.cache.store import TraceCache, TraceKey
from ncucampaign.plan.share.partition import KeptPartition
from tests.conftest import invocation


def test_a_damaged_field_costs_only_itself() -> None:
    side = TraceSide.model_validate_json(
        json.dumps({"seconds": -3, "runs": [[1.0, 2.0], ["x", 1], [5.0], [3.0, 4.0], [1e9, 1.0]], "kept": "no",
                    "partition": {"groups": [["a", "b"]], "measured_s": 2.5}, "newer": 1})
    )  # fmt: skip
    assert side.seconds is None and side.kept is None
    assert side.runs == [(1.0, 2.0), (3.0, 4.0)]
    assert side.partition is not None and side.partition.groups == [["a", "b"]]


def test_the_cache_keeps_and_reads_its_side_file(tmp_path: Path) -> None:
    cache = TraceCache(tmp_path)
    digest = "d" * 64
    cache.note_run(digest, 12.3456, 4.0)
    cache.keep_partition(digest, KeptPartition((("a", "b"), ("c",)), 7.0))
    again = TraceCache(tmp_path)  # a later run
    assert again.runs(digest) == [(12.346, 4.0)]
    assert again.kept_partition(digest) == KeptPartition((("a", "b"), ("c",)), 7.0)
    side = tmp_path / ".cache" / "traces" / f"{digest}.json"
    side.write_text("[1, 2]")  # no object: nothing kept, no error
    assert again.runs(digest) == [] and again.kept_partition(digest) is None
    assert again.seconds(TraceKey(digest, reusable=True)) is None


def test_a_kept_miss_is_of_one_members_own_run_whole() -> None:
    """The key of a miss kept beside a trace (execute/trace/cache/kept_misses.py) changes with anything its own run is:
    options, command, environment, folder; a member named otherwise with the same run has the same key."""
    base = invocation("typo", kernel_name="rmsnrom_kernel")
    others = [
        invocation("typo", kernel_name="rmsnrom_kernel", launch_skip=1),
        invocation("typo", kernel_name="rmsnorm_kernel"),
        invocation("typo", kernel_name="rmsnrom_kernel", nvtx_include=["decode/"]),
        dataclasses.replace(base, app_argv=("app", "--steps", "2")),
        dataclasses.replace(base, env=(("MODE", "serve"),)),
        dataclasses.replace(base, cwd=Path("elsewhere")),
    ]
    keys = {miss_key(member) for member in others}
    assert len(keys) == len(others) and miss_key(base) not in keys
    assert miss_key(dataclasses.replace(base, name="renamed", timeout=5.0)) == miss_key(base)


def test_the_misses_kept_read_entry_by_entry_and_stay_bounded(tmp_path: Path) -> None:
    kept = KeptMisses.model_validate_json(
        json.dumps({"misses": {"a": {"run": "r1", "diagnosis": ["hint"]}, "b": {"run": ""}, "c": "no",
                               "d": {"run": "r2", "diagnosis": "no list"}, "e": {"run": "r3"}}})
    )  # fmt: skip
    assert {key: miss.run for key, miss in kept.misses.items()} == {"a": "r1", "e": "r3"}
    cache = TraceCache(tmp_path)
    digest = "d" * 64
    for number in range(KEPT_MISSES + 5):
        escaped = "\x00" * 10_000  # six characters each in JSON: the largest file the bounds allow
        cache.note_miss(digest, f"m{number}", kept_miss(f"run{number}" + escaped, [escaped] * 50))
    misses = TraceCache(tmp_path).misses(digest)  # a later run
    assert len(misses) == KEPT_MISSES and "m4" not in misses and f"m{KEPT_MISSES + 4}" in misses
    assert all(
        len(miss.diagnosis) <= 6 and all(len(line) <= 500 for line in miss.diagnosis) for miss in misses.values()
    )
