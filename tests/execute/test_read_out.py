"""execute/shared/read_out.py: a union of more than OWN_REPORTS members is read out of its report (a listing per
set of filters, one read) instead of an `ncu --import` export per member; `ncucampaign export` writes a target's own
report on demand. On the fake ncu, whose reports now hold a result for every launch profiled."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest

from ncucampaign.execute.shared.read_out import OWN_REPORTS
from tests.conftest import FAKE_NCU_DIR, fake_env, load_manifest, logging_ncu, run_cli

pytestmark = pytest.mark.slow  # end to end: runs of 20-40 targets on the fake ncu


def pool(kernels: dict[str, str], skips: int) -> str:
    """Targets of each kernel filter at launch_skip 0..skips-1."""
    return "".join(
        f"- name: {name}_{{launch_skip}}\n  kernel_name: {kernel}\n  matrix:\n    launch_skip: {list(range(skips))}\n"
        for name, kernel in kernels.items()
    )


def listing(report: Path) -> list[dict[str, str]]:
    done = subprocess.run(
        [
            str(FAKE_NCU_DIR / "ncu"),
            "--import",
            str(report),
            "--print-kernel-base",
            "function",
            "--page",
            "raw",
            "--csv",
        ],
        capture_output=True,
        text=True,
        env=fake_env(),
        check=True,
    )
    return [row for row in csv.DictReader(io.StringIO(done.stdout)) if row["ID"].isdigit()]


def test_a_large_unions_members_are_read_out_at_their_launches_with_no_export_each(
    tmp_path: Path, write_campaign
) -> None:
    campaign = write_campaign(pool({"rms": "rmsnorm_kernel", "gemm": "regex:nvjet"}, OWN_REPORTS + 4))
    calls, ncu = logging_ncu(tmp_path / "ncu")
    done = run_cli("run", str(campaign), "--out", "runs", "--ncu", str(ncu), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    read_out = [t for t in manifest["targets"] if t["report"]["ids"] is not None]
    unions = {run["name"]: run["members"] for run in manifest["shared_runs"] if run["kind"] == "union"}
    assert read_out and all(len(unions[t["obtained"]["shared_run"]]) > OWN_REPORTS for t in read_out)
    exports = [line for line in calls.read_text().splitlines() if "--import" in line and " -o " in line]
    assert not [line for line in exports if any(f"/{t['name']}.ncu-rep" in line for t in read_out)]
    listed = [line for line in calls.read_text().splitlines() if "--page raw" in line and "reports/shared/" in line]
    union_listings = [line for line in listed if "/shared/trace-" not in line]
    assert len(union_listings) <= 3 * len(unions)  # per union: its own listing and one a set of filters
    rows = {}
    for record in read_out:
        report = record["report"]
        assert record["status"] == "ok" and report["path"].startswith("reports/shared/") and report["results"] == 1
        assert record["attempts"][-1]["message"].startswith("read out of shared/") and len(record["results"]) == 1
        rows.setdefault(report["path"], listing(run_dir / report["path"]))
        (place,) = report["ids"]
        kernel = rows[report["path"]][place]["Kernel Name"]
        assert kernel.startswith("rmsnorm_kernel" if record["name"].startswith("rms_") else "nvjet"), kernel
    for family in ("rms_", "gemm_"):  # each family's launches, in the order of their skips
        ordered = sorted(
            (t for t in read_out if t["name"].startswith(family)), key=lambda t: int(t["name"][len(family) :])
        )
        places = [t["report"]["ids"][0] for t in ordered]
        assert places == sorted(places) and len(set(places)) == len(places)


def test_export_writes_the_own_report_a_split_would_have_written(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(pool({"rms": "rmsnorm_kernel", "gemm": "regex:nvjet"}, OWN_REPORTS + 2))
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 0
    run_dir, _ = load_manifest(tmp_path / "runs")
    done = run_cli("export", str(run_dir), "--only", "rms_3", "gemm_0", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["reports/rms_3.ncu-rep", "reports/gemm_0.ncu-rep"]
    exported = listing(run_dir / "reports" / "rms_3.ncu-rep")
    assert [row["Kernel Name"] for row in exported] == ["rmsnorm_kernel"]
    unknown = run_cli("export", str(run_dir), "--only", "nope", cwd=tmp_path)
    assert unknown.returncode == 2 and "no target nope" in unknown.stderr


def test_a_union_of_up_to_own_reports_members_still_writes_each_its_own(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(pool({"rms": "rmsnorm_kernel"}, OWN_REPORTS))
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 0
    run_dir, manifest = load_manifest(tmp_path / "runs")
    assert {t["report"]["path"] for t in manifest["targets"]} == {
        f"reports/rms_{i}.ncu-rep" for i in range(OWN_REPORTS)
    }
    assert all(t["report"]["ids"] is None for t in manifest["targets"])
    nothing = run_cli("export", str(run_dir), cwd=tmp_path)
    assert nothing.returncode == 0 and nothing.stdout.startswith("nothing to export")


def test_findings_of_read_out_targets_read_the_shared_report_once_at_their_places(
    tmp_path: Path, write_campaign
) -> None:
    campaign = write_campaign(pool({"rms": "rmsnorm_kernel"}, OWN_REPORTS + 3))
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 0
    run_dir, _ = load_manifest(tmp_path / "runs")
    done = run_cli("findings", str(run_dir), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(done.stdout)
    occurrences = [occurrence for finding in found for occurrence in finding["occurrences"]]
    assert {o["target"] for o in occurrences} == {f"rms_{i}" for i in range(OWN_REPORTS + 3)}  # each has its own
    assert {o["result"] for o in occurrences} == {0}  # numbered as in a report of its own
