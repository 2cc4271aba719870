"""A record carries what results need (its launch count, the metrics it named, whether ncu collected sections) as
values: a new one from its options, an older one (written before those fields) from its recorded command line, read
once where the manifest is read. results/ parses no command line."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from ncucampaign.execute.rundir.manifest import TargetRecord
from ncucampaign.execute.rundir.older import upgraded
from ncucampaign.execute.rundir.reading import manifest_of
from ncucampaign.plan.argv import collects_sections
from ncucampaign.spec.model import TargetOptions

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RESULTS = Path(__file__).resolve().parents[2] / "ncucampaign" / "results"


def _record(argv: list[str]) -> TargetRecord:
    """A record as a version before the fields wrote it, read as the manifest's reader reads one."""
    written = {"name": "t", "target": "t", "argv": argv, "shell_command": "", "env": {}, "cwd": "/", "timeout_s": 1,
               "retries": 0, "expected_results": 1, "status": "ok", "log": "logs/t.log"}  # fmt: skip
    return TargetRecord.model_validate(upgraded({"targets": [written]})["targets"][0])


def test_an_older_record_says_them_in_its_command_line() -> None:
    older = _record(["ncu", "--metrics", "a,b", "--metrics", "b,c", "--launch-count", "12", "--kill", "yes", "app"])
    assert (older.launch_count, older.metrics, older.collects_sections) == (12, ["a", "b", "c"], False)
    with_sections = _record(["ncu", "--section", "SpeedOfLight", "--metrics", "a", "app"])
    assert (with_sections.launch_count, with_sections.collects_sections) == (None, True)
    assert _record(["ncu", "app"]).collects_sections  # ncu's default set


def test_a_real_older_manifest_reads_with_them() -> None:
    with gzip.open(FIXTURES / "history_real_runs" / "plain-c1.json.gz") as handle:
        manifest = manifest_of(Path("manifest.json"), json.load(handle))
    union = next(run for run in manifest.shared_runs if run.kind == "union")
    assert union.launch_count is not None and union.launch_count > 0
    target = manifest.targets[0]
    assert "gpu__time_duration.sum" in target.metrics and not target.collects_sections


def test_a_new_record_takes_them_from_its_options_not_from_its_command_line() -> None:
    record = _record(["ncu", "app"]).model_copy(
        update={"launch_count": 3, "metrics": ["x"], "collects_sections": False}
    )
    again = TargetRecord.model_validate(record.model_dump())  # as a manifest written now is read back
    assert (again.launch_count, again.metrics, again.collects_sections) == (3, ["x"], False)


def test_sections_are_collected_unless_metrics_come_alone() -> None:
    assert collects_sections(TargetOptions.model_validate({}))
    assert not collects_sections(TargetOptions.model_validate({"metrics": ["a"]}))
    assert collects_sections(TargetOptions.model_validate({"metrics": ["a"], "sections": ["SpeedOfLight"]}))
    assert collects_sections(TargetOptions.model_validate({"metrics": ["a"], "set": "basic"}))


def test_results_parse_no_command_line() -> None:
    found = [
        f"{path.relative_to(RESULTS)}: {line.strip()}"
        for path in RESULTS.rglob("*.py")
        for line in path.read_text().splitlines()
        if re.search(r"\.argv\b", line) and not re.match(r"^[\w.,\s]*=", line)  # blanking it is no reading
    ]
    assert found == [], found


def test_a_record_written_now_is_refused_without_them_so_the_reader_upgrades_an_older_one() -> None:
    """The models hold no before-validator (pydantic then builds every record as Python objects before it validates:
    0.3 s and 320 MB more at 20,000 targets): a record without the fields must fail the models as it is."""
    written = _record(["ncu", "app"]).model_dump(mode="json")
    del written["collects_sections"]
    with pytest.raises(ValidationError):
        TargetRecord.model_validate(written)
