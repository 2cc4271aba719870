"""Shared runs end to end against the fake ncu: split, verify, fall back, time out, interrupt, resume."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPORT, alive, campaign_text, fake_env, load_manifest, run_cli, target
from tests.execute.shared_campaigns import TRACE_TARGETS, obtained, profiled_launch, run

pytestmark = pytest.mark.slow  # runs the CLI end to end


@pytest.mark.versions
def test_targets_with_different_filters_are_split_out_of_one_run_and_verified(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(TRACE_TARGETS)
    done = run(campaign)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    assert obtained(manifest) == dict.fromkeys(["rms-0", "rms-5", "gemm-1", "gemm-2", "mlp_rms"], "shared")
    trace, union = manifest["shared_runs"]
    assert trace["name"].startswith("shared/trace-") and trace["status"] == "ok"
    assert (
        union["status"] == "ok" and union["window"] == "trace" and union["trace"]["report"] == trace["report"]["path"]
    )
    # rmsnorm's 1st and 6th launches and nvjet's 2nd and 3rd: invocations 1, 2, 5 and 6 of the two wanted
    # functions, named exactly (the prefill GEMM's function matches `nvjet` too, but no member wants it):
    # 6 launches up to the last wanted (the union's own filter would pick 7; the window holds 8)
    functions = "^(nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT|rmsnorm_kernel)$"
    assert f"--kernel-id '::regex:{functions}:1|2|5|6' --launch-count 6" in union["shell_command"]
    for record in manifest["targets"]:
        assert record["status"] == "ok" and record["report"]["results"] == 1
        assert "discovery trace lists at launch index" in record["obtained"]["verification"]
        assert record["obtained"]["shared_run"] == "shared/1"
    separate = tmp_path / "separate"
    separate.mkdir()
    (separate / "camp.yaml").write_text(campaign.read_text())
    assert run(separate / "camp.yaml", "--no-share").returncode == 0
    alone_dir, alone_manifest = load_manifest(separate / "runs")
    assert set(obtained(alone_manifest).values()) == {"alone"} and not alone_manifest["shared_runs"]
    for name in obtained(manifest):  # the split holds the launch a run of its own profiles
        assert profiled_launch(run_dir, name) == profiled_launch(alone_dir, name), name


def test_a_shared_run_that_times_out_hands_its_targets_to_runs_of_their_own(tmp_path: Path, write_campaign) -> None:
    hang = tmp_path / "hang"
    hang.touch()
    args = f"args: [--hang-at-step, '2', --hang-file, {json.dumps(str(hang))}]"
    campaign = write_campaign(
        "- name: t\n  kernel_name: rmsnorm_kernel\n  timeout: 3\n  stop_grace: 1\n  matrix:\n    launch_skip: [0, 1, 2, 9]",
        defaults=args,
    )
    done = run(campaign)
    assert done.returncode == 1, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    union = manifest["shared_runs"][0]
    assert union["status"] == "timed_out" and union["window"] == "targets"
    assert [t["status"] for t in manifest["targets"]] == ["ok", "ok", "ok", "timed_out"]
    assert all(
        t["obtained"]["how"] == "alone" and "shared/1 ended timed_out" in t["obtained"]["reason"]
        for t in manifest["targets"]
    )
    hang.unlink()
    resumed = run(campaign, "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    assert [t["status"] for t in manifest["targets"]] == ["ok"] * 4
    assert [len(t["attempts"]) for t in manifest["targets"]] == [1, 1, 1, 2]  # only t-9 ran again


@pytest.mark.parametrize("how", ["SIGINT", "SIGKILL"])
def test_an_interrupted_shared_run_loses_nothing_and_resume_splits_each_target_once(
    tmp_path: Path, write_campaign, how: str
) -> None:
    """SIGINT: the runner stops the shared run and records it; SIGKILL: a crashed runner leaves its
    ncu hanging, which --resume kills before it groups the targets again."""
    hang = tmp_path / "hang"
    hang.touch()
    args = f"args: [--hang-at-step, '2', --hang-file, {json.dumps(str(hang))}]"
    campaign = write_campaign(
        "- name: t\n  kernel_name: rmsnorm_kernel\n  matrix:\n    launch_skip: [0, 1, 2, 9]", defaults=args
    )
    runner = subprocess.Popen(
        [sys.executable, "-m", "ncucampaign", "run", str(campaign), "--out", "runs"],
        cwd=tmp_path,
        env=fake_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = tmp_path / "runs" / "camp" / "latest" / "logs" / "shared" / "1.log"
    deadline = time.monotonic() + 60
    while "hanging at step 2" not in (log.read_text() if log.is_file() else ""):  # the union run hangs now
        assert time.monotonic() < deadline, "the shared run never reached the hang"
        time.sleep(0.05)
    app = int(re.search(r"\[app pid=(\d+)\] hanging", log.read_text()).group(1))  # type: ignore[union-attr]
    runner.send_signal(getattr(signal, how))
    out, err = runner.communicate(timeout=60)
    run_dir, manifest = load_manifest(tmp_path / "runs")
    if how == "SIGINT":
        assert runner.returncode == 130, out + err
        assert manifest["state"] == "interrupted" and manifest["shared_runs"][0]["status"] == "interrupted"
        assert [t["status"] for t in manifest["targets"]] == ["interrupted"] * 4
    else:
        assert runner.returncode == -9 and alive(app)  # the shared run's application is left hanging
        assert manifest["state"] == "running" and manifest["shared_runs"][0]["status"] == "running"
    assert not list((run_dir / "reports").glob("t-*.ncu-rep"))
    hang.unlink()
    resumed = run(campaign, "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    assert not alive(app)
    assert [r["name"] for r in manifest["shared_runs"]] == ["shared/1", "shared/2"]
    assert manifest["shared_runs"][0]["status"] == "interrupted"
    for record in manifest["targets"]:
        assert record["status"] == "ok" and record["obtained"]["shared_run"] == "shared/2"
        assert [a["message"] for a in record["attempts"]] == ["split out of shared/2"]
        assert len(record["results"]) == 1
    summary = run_cli("summarize", str(run_dir), "--format", "json", cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    rows = json.loads(summary.stdout)
    assert sorted({row["target"] for row in rows}) == ["t-0", "t-1", "t-2", "t-9"]  # no shared run counted
    assert len({(row["target"], row["result"]) for row in rows}) == 4


def test_with_gpus_a_shared_run_is_one_unit_pinned_like_a_target(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(TRACE_TARGETS + "- name: other\n  kernel_name: rmsnorm_kernel\n  share: 'off'\n")
    done = run(campaign, "--gpus", "0,1")
    assert done.returncode == 0, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    union = manifest["shared_runs"][-1]
    assert union["gpus"] in (["0"], ["1"]) and union["env"]["CUDA_VISIBLE_DEVICES"] == union["gpus"][0]
    for name in ("rms-0", "gemm-2", "mlp_rms"):
        assert target(manifest, name)["gpus"] == union["gpus"]


def test_a_clean_git_workload_reuses_its_discovery_trace(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(TRACE_TARGETS)
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "w"]):
        subprocess.run(["git", *command], cwd=tmp_path, check=True, capture_output=True)
    assert run(campaign).returncode == 0
    _, first = load_manifest(tmp_path / "runs")
    assert [r["name"][:13] for r in first["shared_runs"]] == ["shared/trace-", "shared/1"]
    assert run(campaign).returncode == 0
    _, second = load_manifest(tmp_path / "runs")
    assert [r["name"] for r in second["shared_runs"]] == ["shared/1"]  # no trace run this time
    assert second["shared_runs"][0]["trace"]["reused"] is True
    assert second["shared_runs"][0]["trace"]["key"] == first["shared_runs"][1]["trace"]["key"]
    assert set(obtained(second).values()) == {"shared"}


def test_a_cached_trace_ncu_cannot_read_is_dropped_and_traced_again(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(TRACE_TARGETS)
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "w"]):
        subprocess.run(["git", *command], cwd=tmp_path, check=True, capture_output=True)
    assert run(campaign).returncode == 0
    (cached,) = (tmp_path / "runs" / ".cache" / "traces").glob(f"*{REPORT}")
    cached.unlink()  # a damaged cache: the file is there, but ncu cannot import it
    cached.write_bytes(b"not a report")
    done = run(campaign)
    assert done.returncode == 0, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    assert [r["name"][:13] for r in manifest["shared_runs"]] == ["shared/trace-", "shared/1"]  # traced again
    assert manifest["shared_runs"][1]["trace"]["reused"] is False
    assert {t["obtained"]["how"] for t in manifest["targets"]} == {"shared"}
    assert cached.read_bytes() != b"not a report"  # the cache holds the new trace


def test_a_target_whose_launches_never_happen_is_decided_on_the_trace_and_the_others_still_share(
    tmp_path: Path,
) -> None:
    # One metric a launch (0.02 s by the cost rule): a late window is still worth sharing.
    text = campaign_text(TRACE_TARGETS + "- name: late\n  kernel_name: rmsnorm_kernel\n  launch_skip: 55\n")
    campaign = tmp_path / "camp.yaml"
    campaign.write_text(text.replace("  sections: SpeedOfLight\n", "  metrics: [gpu__time_duration.sum]\n"))
    done = run(campaign)
    assert done.returncode == 1, done.stdout + done.stderr  # `late` profiles nothing: no_kernels
    _, manifest = load_manifest(tmp_path / "runs")
    late = target(manifest, "late")
    # the trace ran the application to its end and holds 49 rmsnorm launches: a 56th never happens,
    # so `late` gets no application start of its own
    assert late["status"] == "no_kernels" and late["obtained"]["how"] == "trace" and late["attempts"] == []
    assert "ran the application to its end" in late["obtained"]["reason"]
    assert late["message"].startswith("no kernels were profiled")
    assert {t["obtained"]["how"] for t in manifest["targets"] if t["name"] != "late"} == {"shared"}
    assert [r["name"][:13] for r in manifest["shared_runs"]] == ["shared/trace-", "shared/1"]  # one trace, one run
