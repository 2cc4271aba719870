"""What a runner killed with -9 leaves is either named by a record or removed (round 7, item 6): the report of an
attempt no record names (a discovery trace's, 55 MB at 1,000 targets, was set aside as `.attempt-0` and named by
nothing), and a run directory killed before its first manifest (plan.json, .lock, an empty temporary file), which
resume called "not a run directory" and nothing removed."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncucampaign.execute.resume import never_begun
from ncucampaign.execute.rundir.store import RunStore
from tests.conftest import campaign_text, run_cli


def test_a_report_no_attempt_recorded_is_removed_not_set_aside_as_attempt_0(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path / "runs", "camp")
    left = store.run.report("shared/trace-abc")
    left.parent.mkdir(parents=True, exist_ok=True)
    left.write_bytes(b"what a killed trace left")
    assert store.keep_report("shared/trace-abc", 0) is None
    assert not left.exists() and list(store.run.reports.rglob("*.ncu-rep*")) == []
    recorded = store.run.report("t")
    recorded.write_bytes(b"attempt 1's report")
    assert store.keep_report("t", 1) == f"reports/t.attempt-1{recorded.suffix}"  # a recorded one is kept, renamed


def killed_before_the_manifest(runs: Path) -> Path:
    """A run directory as a runner killed before its first manifest write leaves it."""
    root = runs / "camp" / "20261207-010101"
    (root / "reports" / "shared").mkdir(parents=True)
    (root / "logs").mkdir()
    (root / "plan.json").write_text("{}")
    (root / ".lock").write_text("")
    (root / ".manifest.json.abc.tmp").write_text("")
    return root


@pytest.mark.slow
def test_a_run_killed_before_its_manifest_is_named_so_by_resume_and_removed_by_the_next_run(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n"))
    root = killed_before_the_manifest(tmp_path / "runs")
    kept = tmp_path / "runs" / "camp" / "mine"
    kept.mkdir()
    (kept / "plan.json").write_text("{}")
    (kept / "notes.txt").write_text("the user's own")  # not what a run writes first: left alone
    resumed = run_cli("run", "--resume", str(root), cwd=tmp_path)
    assert resumed.returncode == 2 and "stopped before it began" in resumed.stderr, resumed.stderr
    assert "nothing ran in it" in resumed.stderr
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not root.exists() and (kept / "notes.txt").exists()


def test_only_a_folder_holding_what_a_run_writes_first_counts_as_never_begun(tmp_path: Path) -> None:
    root = killed_before_the_manifest(tmp_path / "runs")
    assert never_begun(root)
    (root / "reports" / "shared" / "1.ncu-rep").write_bytes(b"x")  # a report: something ran
    assert not never_begun(root)
    (root / "reports" / "shared" / "1.ncu-rep").unlink()
    (root / "manifest.json").write_text("{}")
    assert not never_begun(root)
