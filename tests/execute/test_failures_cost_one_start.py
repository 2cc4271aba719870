"""A failure costs one application start per cause, not one per member: a union of identical filters that the
application ended short of decides its members exactly (as their own runs would end), a target validate refuses
never enters a trace or a union, and an application error met by the trace and two targets closes the others."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.conftest import fake_env, load_manifest, run_cli

pytestmark = pytest.mark.slow  # end to end on the fake ncu


def application_starts(manifest: dict) -> int:
    """Attempts that started the application: shared runs' and traces', and targets' own (splits start none)."""
    own = [a for t in manifest["targets"] for a in t["attempts"] if not a["message"].startswith(("split", "read"))]
    return sum(len(run["attempts"]) for run in manifest["shared_runs"]) + len(own)


def test_a_union_the_application_ended_short_of_decides_its_members_as_their_own_runs_would(
    tmp_path: Path, write_campaign
) -> None:
    """range_filter ::1..::6 on a 4-step application: instances 5 and 6 do not exist (no_kernels), and in the others
    a window past the 4 launches there is short (incomplete). Before: every member of those unions ran alone."""
    matrix = (
        "- name: m_{range_filter}_{launch_skip}_{launch_count}\n  nvtx_include: decode_step/\n"
        "  kernel_name: rmsnorm_kernel\n  matrix:\n    range_filter: ['::1', '::2', '::3', '::4', '::5', '::6']\n"
        "    launch_skip: [0, 2, 4]\n    launch_count: [1, 3]\n"
    )
    campaign = write_campaign(matrix, "args: [--steps, '4']")
    shared = run_cli("run", str(campaign), "--out", "shared", cwd=tmp_path)
    alone = run_cli("run", str(campaign), "--out", "alone", "--no-share", cwd=tmp_path)
    assert shared.returncode == alone.returncode == 1, shared.stdout + shared.stderr
    _, with_sharing = load_manifest(tmp_path / "shared")
    _, own_runs = load_manifest(tmp_path / "alone")
    statuses = {t["name"]: t["status"] for t in own_runs["targets"]}
    assert {t["name"]: t["status"] for t in with_sharing["targets"]} == statuses  # the same as their own runs
    assert {"ok", "incomplete", "no_kernels"} <= set(statuses.values())
    assert application_starts(with_sharing) == 6  # one union a range instance, none for a member
    assert not [t for t in with_sharing["targets"] if (t["obtained"] or {}).get("how") == "alone"]


def test_a_target_validate_refuses_never_enters_the_trace_and_the_rest_share(tmp_path: Path, write_campaign) -> None:
    targets = (
        "- name: rms_{launch_skip}\n  kernel_name: rmsnorm_kernel\n  matrix:\n    launch_skip: [0, 1, 2, 3, 4]\n"
        "- name: gemm_{launch_skip}\n  kernel_name: regex:nvjet\n  matrix:\n    launch_skip: [0, 1, 2, 3, 4]\n"
        '- name: bad\n  kernel_name: "regex:nvjet(sm90"\n'
    )
    campaign = write_campaign(targets)
    assert run_cli("validate", str(campaign), cwd=tmp_path).returncode == 2
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    bad = next(t for t in manifest["targets"] if t["name"] == "bad")
    assert bad["status"] == "usage_error" and bad["attempts"] == []
    assert bad["message"].startswith("not started: validate refuses it (NCU005: the regex does not compile")
    assert [t["status"] for t in manifest["targets"] if t["name"] != "bad"] == ["ok"] * 10
    assert application_starts(manifest) == 2  # the trace and one union


def test_an_application_error_the_trace_and_two_targets_met_closes_the_others_unstarted(
    tmp_path: Path, write_campaign
) -> None:
    app = tmp_path / "app.sh"
    app.write_text("#!/bin/sh\necho 'error: MODEL_DIR is not set' >&2\nexit 1\n")
    app.chmod(app.stat().st_mode | stat.S_IEXEC)
    targets = "".join(
        f"- name: {kind}_{{launch_skip}}\n  kernel_name: {kernel}\n  matrix:\n    launch_skip: {list(range(30))}\n"
        for kind, kernel in (("rms", "rmsnorm_kernel"), ("gemm", "regex:nvjet"))
    )
    campaign = tmp_path / "camp.yaml"
    text = write_campaign(targets).read_text()
    campaign.write_text(text.replace(text.splitlines()[1], f"  command: [{json.dumps(str(app))}]"))
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    assert {t["status"] for t in manifest["targets"]} == {"app_failed"}
    assert application_starts(manifest) <= 3
    unstarted = [t for t in manifest["targets"] if not t["attempts"]]
    assert len(unstarted) == 58 and all("error: MODEL_DIR is not set" in t["message"] for t in unstarted)
    assert done.stdout.count("MODEL_DIR is not set") < 12  # said once for the many it closed, not 58 times


def test_a_union_one_member_makes_fail_is_halved_until_that_member_is_alone(tmp_path: Path, write_campaign) -> None:
    """ncu fails to profile with one section (FAKE_NCU_FAIL_ON), which one member asks for: the union holding it ends
    profiler_error. Before, every member then ran alone; now the halves without it share, and it ends alone."""
    targets = (
        "- name: rms_{launch_skip}\n  kernel_name: rmsnorm_kernel\n  matrix:\n    launch_skip: [0, 1, 2, 4, 5, 6]\n"
        "- name: gemm_{launch_skip}\n  kernel_name: regex:nvjet\n  matrix:\n    launch_skip: [0, 1, 2, 3, 4, 5, 6]\n"
        "- name: sampled\n  kernel_name: rmsnorm_kernel\n  launch_skip: 3\n  sections: [SpeedOfLight, PmSampling]\n"
    )
    campaign = write_campaign(targets)
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=fake_env(FAKE_NCU_FAIL_ON="PmSampling"))
    assert done.returncode == 1, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    statuses = {t["name"]: t["status"] for t in manifest["targets"]}
    assert statuses.pop("sampled") == "profiler_error" and set(statuses.values()) == {"ok"}
    unions = [run for run in manifest["shared_runs"] if run["kind"] == "union"]
    assert [run["status"] for run in unions].count("profiler_error") >= 2  # the union, then the half that held it
    shared = [t for t in manifest["targets"] if (t["obtained"] or {}).get("how") == "shared"]
    assert len(shared) >= 10  # most members still shared
    assert application_starts(manifest) <= 2 * 4 + 4  # the trace, the union, a pair a halving, and a few alone


def test_a_kernel_ncu_fails_to_profile_sends_only_its_members_alone_and_the_rest_share(
    tmp_path: Path, write_campaign
) -> None:
    """Round 7, item 7: ncu failing on rmsnorm_kernel (FAKE_NCU_FAIL_ON) failed the union and both of its halves
    (each held members of both kernels): 100 targets of each kernel took 204 starts, the 100 innocent ones alone,
    where --no-share takes 200. Parted by the kernel ncu names, the others share one more union (106 starts)."""
    targets = "".join(
        f"- name: {kind}_{{launch_skip}}\n  kernel_name: {kernel}\n  matrix:\n    launch_skip: {list(range(100))}\n"
        for kind, kernel in (("rms", "rmsnorm_kernel"), ("gemm", "regex:nvjet"))
    )
    campaign = write_campaign(targets, "args: [--steps, '110']")
    env = fake_env(FAKE_NCU_FAIL_ON="rmsnorm")
    shared = run_cli("run", str(campaign), "--out", "shared", cwd=tmp_path, env=env)
    assert shared.returncode == 1, shared.stdout[-2000:] + shared.stderr[-2000:]
    _, manifest = load_manifest(tmp_path / "shared")
    statuses = {t["name"]: t["status"] for t in manifest["targets"]}
    assert all(statuses[f"gemm_{i}"] == "ok" for i in range(100)), statuses
    assert all(statuses[f"rms_{i}"] != "ok" for i in range(100))
    starts = application_starts(manifest)
    # the trace, the union, the innocent union, the rms union and its halves, each rms alone: fewer than --no-share
    assert starts <= 1 + 1 + 1 + 3 + 100 < 200, starts
    assert not [t for t in manifest["targets"] if t["name"].startswith("gemm") and t["obtained"]["how"] == "alone"]


def test_an_application_that_fails_after_its_work_still_shares_its_trace(tmp_path: Path, write_campaign) -> None:
    """Round 7, item 7: the application exits 3 after its last step; the trace's report (74 launches) was kept, yet
    the pool was given up and every target ran alone (41 starts). Its launches are used, as a timeout's are."""
    targets = "".join(
        f"- name: {kind}_{{launch_skip}}\n  kernel_name: {kernel}\n  matrix:\n    launch_skip: {list(range(20))}\n"
        for kind, kernel in (("rms", "rmsnorm_kernel"), ("gemm", "regex:nvjet"))
    )
    campaign = write_campaign(targets, "args: [--exit-code, '3']")
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    _, manifest = load_manifest(tmp_path / "runs")
    assert {t["status"] for t in manifest["targets"]} == {"ok"}
    trace = next(r for r in manifest["shared_runs"] if r["kind"] == "trace")
    assert trace["status"] == "app_failed" and "launches it traced until then are used" in trace["message"]
    assert application_starts(manifest) <= 3 and "alone" not in {t["obtained"]["how"] for t in manifest["targets"]}
