"""A shared run's kind (union, discovery trace, timing pass) is a field of its record, no
longer read from its name's prefix across the code; manifests written before the field still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncucampaign.execute.rundir.reading import manifest_of
from tests.conftest import ROOT, campaign_text, fake_env, load_manifest, run_cli
from tests.execute.shared_campaigns import TRACE_TARGETS

pytestmark = pytest.mark.slow  # runs the CLI end to end


def test_every_shared_run_records_its_kind_and_old_manifests_get_theirs_from_the_name(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text(TRACE_TARGETS) + "weigh: true\n")
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    kinds = {r["name"]: r["kind"] for r in manifest["shared_runs"]}
    assert set(kinds.values()) == {"union", "trace", "timing"}, kinds
    assert all(name.startswith("shared/trace-") == (kind == "trace") for name, kind in kinds.items())
    assert all(name.startswith("shared/timing-") == (kind == "timing") for name, kind in kinds.items())
    for record in manifest["shared_runs"]:  # as an older ncucampaign wrote it
        del record["kind"]
    old = manifest_of(run_dir / "manifest.json", manifest)
    assert {r.name: r.kind for r in old.shared_runs} == kinds
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    assert run_cli("summarize", str(run_dir), cwd=tmp_path).returncode == 0


def test_only_the_manifest_reads_a_kind_from_a_name() -> None:
    readers = [
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "ncucampaign").rglob("*.py")
        if "startswith(TRACE_PREFIX" in path.read_text() or "startswith(TIMING_PREFIX" in path.read_text()
    ]
    assert readers == ["ncucampaign/execute/rundir/status.py"], readers


def test_plan_prints_the_split_commands_the_run_runs(tmp_path: Path) -> None:
    """One function splits for both, and both name the group shared/1 (the plan said shared-1)."""
    targets = "- name: rms\n  kernel_name: rmsnorm_kernel\n  matrix:\n    launch_skip: [0, 2, 4]\n"
    (tmp_path / "camp.yaml").write_text(campaign_text(targets))
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    [union] = manifest["shared_runs"]
    reports = str(run_dir / "reports")
    plan = run_cli("plan", "camp.yaml", "--format", "json", "--report-dir", reports, cwd=tmp_path, env=fake_env())
    [group] = json.loads(plan.stdout)["shared_runs"]
    assert group["name"] == union["name"] == "shared/1"
    for member in group["members"]:
        log = (run_dir / "logs" / f"{member}.log").read_text()
        ran = log.split(f"# ncucampaign: split out of {union['name']}, ", 1)[1].splitlines()[1].removeprefix("# ")
        planned = group["splits"][member]  # the same but for ncu's path, which the run resolves
        assert ran.split(" ", 1)[1] == planned.split(" ", 1)[1] and ran.split(" ", 1)[0].endswith("/ncu"), ran
    ran_union, planned_union = union["shell_command"].split("/ncu ", 1)[1], group["union"].split(" ncu ", 1)[1]
    assert ran_union == planned_union, (ran_union, planned_union)
