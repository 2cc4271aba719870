"""What the trace cache keeps beside a trace is one model (execute/trace/side_file.py): a value that does not read as
its field is no value, and it costs no other field; a file that is no object is nothing kept."""

from __future__ import annotations

import json
from pathlib import Path

from ncucampaign.execute.trace.cache import TraceCache, TraceKey
from ncucampaign.execute.trace.side_file import TraceSide
from ncucampaign.plan.share.partition import KeptPartition


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
