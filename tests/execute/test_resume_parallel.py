"""Unattended runs: resume, the run-directory lock, interruption (SIGINT, SIGTERM, SIGKILL of the
runner, then resume), and running targets side by side on several GPUs. All against the fake ncu."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPORT, alive, fake_env, load_manifest, run_cli, target

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups via /proc"),
    pytest.mark.slow,
]  # slow: runs the CLI end to end

SLOW = {"FAKE_NCU_SECONDS_PER_KERNEL": "0.4"}  # each target takes about a second


@pytest.fixture
def write_campaign(write_campaign):
    """These tests are about targets that run one by one or side by side, each in its own run."""

    def write(targets: str, defaults: str = "", **kwargs: Any) -> Path:
        return write_campaign(targets, defaults or 'share: "off"', **kwargs)

    return write


def four_targets(pids: Path) -> str:
    return "\n".join(
        f"- name: t{i}\n  kernel_name: rmsnorm_kernel\n  launch_count: 2\n  args: [--pid-file, {json.dumps(str(pids))}]"
        for i in range(1, 5)
    )


def start_runner(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ncucampaign", "run", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_running(tmp_path: Path, name: str, timeout: float = 30) -> dict:
    """Until the manifest shows `name` running with its ncu started."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            _, manifest = load_manifest(tmp_path / "runs")
            record = target(manifest, name)
            if record["status"] == "running" and record["attempts"] and record["attempts"][-1]["process_group"]:
                return manifest
        except (FileNotFoundError, json.JSONDecodeError, StopIteration):
            pass
        time.sleep(0.05)
    raise AssertionError(f"{name} never started")


def wait_for_signals(tmp_path: Path, name: str, signals: list[str], timeout: float = 30) -> None:
    """Until the manifest shows the target's running attempt having been sent `signals`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            _, manifest = load_manifest(tmp_path / "runs")
            if target(manifest, name)["attempts"][-1]["signals_sent"] == signals:
                return
        except (FileNotFoundError, json.JSONDecodeError, StopIteration, IndexError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"{name} was never sent {signals}")


def wait_for_log(tmp_path: Path, name: str, text: str, timeout: float = 30) -> None:
    """Until the target's log holds `text`."""
    log = tmp_path / "runs" / "camp" / "latest" / "logs" / f"{name}.log"
    deadline = time.monotonic() + timeout
    while not (log.is_file() and text in log.read_text(errors="replace")):
        assert time.monotonic() < deadline, f"{log} never showed {text!r}"
        time.sleep(0.05)


def assert_finished_cleanly(run_dir: Path, manifest: dict, pids: Path) -> None:
    """Every target ok exactly once; every report the manifest names exists; no stray report; no survivor."""
    referenced = set()
    for record in manifest["targets"]:
        assert record["status"] == "ok", record
        assert [a["status"] for a in record["attempts"]].count("ok") == 1, record["attempts"]
        assert all(a["ended_at"] for a in record["attempts"])
        for attempt in record["attempts"]:
            if attempt["report"]:
                referenced.add(attempt["report"])
                assert (run_dir / attempt["report"]).is_file()
        assert record["report"]["path"] in referenced
    on_disk = {f"reports/{p.name}" for p in (run_dir / "reports").iterdir()}
    assert on_disk == referenced
    started = [int(line) for line in pids.read_text().split()]
    groups = [a["process_group"] for r in manifest["targets"] for a in r["attempts"] if a["process_group"]]
    assert not [pid for pid in started + groups if alive(pid)]


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_interrupted_runner_then_resume_finishes_every_target_once(tmp_path: Path, write_campaign, how: str) -> None:
    pids = tmp_path / "pids"
    campaign = write_campaign(four_targets(pids))
    runner = start_runner(tmp_path, str(campaign), "--out", "runs", env=fake_env(**SLOW))
    wait_for_running(tmp_path, "t2")
    runner.send_signal(getattr(signal, how))
    out, err = runner.communicate(timeout=60)
    if how == "SIGKILL":
        assert runner.returncode == -9
    else:
        assert runner.returncode == 130, out + err
        run_dir, manifest = load_manifest(tmp_path / "runs")
        assert manifest["state"] == "interrupted"
        assert [t["status"] for t in manifest["targets"]] == ["ok", "interrupted", "pending", "pending"]
        assert target(manifest, "t2")["attempts"][0]["signals_sent"] == ["SIGINT"]
    done = run_cli("run", str(campaign), "--out", "runs", "--resume", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 already done, skipped" in done.stdout
    run_dir, manifest = load_manifest(tmp_path / "runs")
    assert manifest["state"] == "finished" and len(manifest["resumed"]) == 1
    assert len(target(manifest, "t1")["attempts"]) == 1  # not run again
    assert target(manifest, "t2")["attempts"][0]["status"] == "interrupted"
    assert_finished_cleanly(run_dir, manifest, pids)


def test_second_ctrl_c_kills_at_once(tmp_path: Path, write_campaign) -> None:
    pids = tmp_path / "pids"
    campaign = write_campaign(
        f"- name: stuck\n  kernel_name: rmsnorm_kernel\n  launch_count: 100\n"
        f"  args: [--hang-at-step, '2', --pid-file, {json.dumps(str(pids))}]\n  stop_grace: 60\n"
    )
    runner = start_runner(tmp_path, str(campaign), "--out", "runs", env=fake_env(FAKE_NCU_IGNORE_SIGINT="1"))
    wait_for_running(tmp_path, "stuck")
    # The fake ncu ignores SIGINT from before it prints "Connected": until then, SIGINT would end it
    # at once and there would be no second Ctrl-C to test (4 of 4 failures on a loaded machine).
    wait_for_log(tmp_path, "stuck", "==PROF== Connected to process")
    # ...and the application has written its pid (on a loaded machine it may not have yet, and the
    # last check would find no file to read).
    wait_for_log(tmp_path, "stuck", "hanging")
    runner.send_signal(signal.SIGINT)
    wait_for_signals(tmp_path, "stuck", ["SIGINT"])  # the runner passed it on to the process group
    runner.send_signal(signal.SIGINT)
    out, err = runner.communicate(timeout=30)  # well before the 60 s grace
    assert runner.returncode == 130, out + err
    _, manifest = load_manifest(tmp_path / "runs")
    attempt = target(manifest, "stuck")["attempts"][0]
    assert attempt["status"] == "interrupted" and attempt["signals_sent"] == ["SIGINT", "SIGKILL"]
    assert "killing the running attempt now" in err
    assert not [pid for pid in map(int, pids.read_text().split()) if alive(pid)]


def test_resume_reruns_failed_and_changed_targets_only(tmp_path: Path, write_campaign) -> None:
    flag = tmp_path / "flaky"
    campaign = write_campaign(
        f"- name: good\n  kernel_name: rmsnorm_kernel\n- name: changes\n  kernel_name: rmsnorm_kernel\n"
        f"- name: flaky\n  kernel_name: rmsnorm_kernel\n  args: [--flaky-file, {json.dumps(str(flag))}]\n"
    )
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 1
    before = campaign.read_text()
    campaign.write_text(before.replace("  - name: changes\n", "  - name: changes\n    args: [--steps, '3']\n"))
    assert campaign.read_text() != before
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()
    done = run_cli("run", str(campaign), "--resume", str(run_dir), cwd=tmp_path)  # the edited campaign, named
    assert done.returncode == 0, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    attempts = {t["name"]: [a["status"] for a in t["attempts"]] for t in manifest["targets"]}
    assert attempts == {"good": ["ok"], "changes": ["ok", "ok"], "flaky": ["app_failed", "ok"]}
    changes = target(manifest, "changes")
    assert changes["attempts"][0]["report"] == f"reports/changes.attempt-1{REPORT}"  # the earlier result is kept
    assert (run_dir / "reports" / f"changes.attempt-1{REPORT}").is_file()
    assert changes["argv"][-2:] == ["--steps", "3"]


def test_rerun_failed_runs_only_failures(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: good\n  kernel_name: rmsnorm_kernel\n- name: bad\n  kernel_name: typo_kernel\n")
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 1
    campaign.write_text(campaign.read_text() + "  - name: added\n    kernel_name: rmsnorm_kernel\n")
    done = run_cli("run", str(campaign), "--out", "runs", "--rerun-failed", cwd=tmp_path)
    assert done.returncode == 1  # 'bad' still profiles nothing
    _, manifest = load_manifest(tmp_path / "runs")
    # a resume finishes the run that was started: a target added since is not part of it
    assert {t["name"]: len(t["attempts"]) for t in manifest["targets"]} == {"good": 1, "bad": 2}


def test_a_run_directory_in_use_is_refused(tmp_path: Path, write_campaign) -> None:
    pids = tmp_path / "pids"
    campaign = write_campaign(four_targets(pids))
    runner = start_runner(tmp_path, str(campaign), "--out", "runs", env=fake_env(**SLOW))
    try:
        wait_for_running(tmp_path, "t1")
        second = run_cli("run", str(campaign), "--out", "runs", "--resume", cwd=tmp_path)
        assert second.returncode == 3
        assert "is in use by another ncucampaign run (pid" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        runner.send_signal(signal.SIGINT)
        runner.communicate(timeout=60)


def test_resume_of_another_campaign_is_refused(tmp_path: Path, write_campaign) -> None:
    first = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    assert run_cli("run", str(first), "--out", "runs", cwd=tmp_path).returncode == 0
    other = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n", name="other.yaml")
    done = run_cli("run", str(other), "--resume", str(tmp_path / "runs" / "camp" / "latest"), cwd=tmp_path)
    assert done.returncode == 2 and "holds campaign 'camp', not 'other'" in done.stderr


def test_gpus_run_targets_side_by_side_each_pinned(tmp_path: Path, write_campaign) -> None:
    pids, timeline = tmp_path / "pids", tmp_path / "timeline"
    campaign = write_campaign(four_targets(pids) + "\n- name: on_one\n  kernel_name: rmsnorm_kernel\n  devices: [1]\n")
    env = fake_env(**SLOW, FAKE_NCU_TIMELINE=str(timeline))
    done = run_cli("run", str(campaign), "--out", "runs", "--gpus", "0,1", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    for record in manifest["targets"]:
        gpu = record["gpus"][0]
        assert record["env"]["CUDA_VISIBLE_DEVICES"] == gpu
        assert record["argv"][record["argv"].index("--devices") + 1] == "0"
        assert f"gpu={gpu}]" in (run_dir / record["log"]).read_text()
    assert target(manifest, "on_one")["gpus"] == ["1"]
    assert {tuple(r["gpus"]) for r in manifest["targets"]} == {("0",), ("1",)}
    events = sorted((float(t), kind) for kind, t, *_ in (line.split() for line in timeline.read_text().splitlines()))
    depth = peak = 0
    for _, kind in events:
        depth += 1 if kind == "start" else -1
        peak = max(peak, depth)
    assert peak == 2  # two ncu processes at once, never more: one per GPU
    assert "[GPU 0]" in done.stdout and "[GPU 1]" in done.stdout


def test_gpus_results_equal_a_sequential_run(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(four_targets(tmp_path / "pids"))
    assert run_cli("run", str(campaign), "--out", "seq", cwd=tmp_path).returncode == 0
    assert run_cli("run", str(campaign), "--out", "par", "--gpus", "0,1", cwd=tmp_path).returncode == 0
    _, sequential = load_manifest(tmp_path / "seq")
    _, parallel = load_manifest(tmp_path / "par")

    def kernels(manifest: dict) -> dict[str, list[str]]:
        return {t["name"]: [r["kernel"] for r in t["results"]] for t in manifest["targets"]}

    assert kernels(sequential) == kernels(parallel) and all(kernels(parallel).values())


def run_dirs(tmp_path: Path) -> set[str]:
    campaign_dir = tmp_path / "runs" / "camp"
    return {p.name for p in campaign_dir.iterdir()} if campaign_dir.is_dir() else set()


def first_run(tmp_path: Path, campaign: Path) -> tuple[set[str], Path]:
    """One finished run, so that `latest` exists: returns the run directories and where latest points."""
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 0
    return run_dirs(tmp_path), (tmp_path / "runs" / "camp" / "latest").resolve()


@pytest.mark.parametrize(
    ("gpus", "targets", "message"),
    [
        ("0,5", "- name: a\n  kernel_name: rmsnorm_kernel\n", "no GPU 5 here (GPUs: 0, 1)"),
        ("GPU-nope", "- name: a\n  kernel_name: rmsnorm_kernel\n", "no GPU GPU-nope here"),
        (
            "0,1",
            "- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  env: {CUDA_VISIBLE_DEVICES: '3'}\n",
            "names GPU 3, not in --gpus",
        ),
    ],
    ids=["not-on-machine", "unknown-uuid", "target-outside-list"],
)
def test_a_gpu_list_that_does_not_fit_exits_2_before_any_run_directory(
    tmp_path: Path, write_campaign, gpus: str, targets: str, message: str
) -> None:
    campaign = write_campaign(targets.split("- name: b")[0])
    before, latest = first_run(tmp_path, campaign)
    campaign = write_campaign(targets)
    done = run_cli("run", str(campaign), "--out", "runs", "--gpus", gpus, cwd=tmp_path)  # fake nvidia-smi: 2 GPUs
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert run_dirs(tmp_path) == before  # no run directory was created
    assert (tmp_path / "runs" / "camp" / "latest").resolve() == latest


def test_gpus_given_by_uuid_are_accepted(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    done = run_cli("run", str(campaign), "--out", "runs", "--gpus", "GPU-fake-0001", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    assert target(manifest, "a")["env"]["CUDA_VISIBLE_DEVICES"] == "GPU-fake-0001"


def test_a_missing_working_directory_exits_2_before_any_run_directory(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n", application_extra="  cwd: no_such_dir\n")
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no_such_dir is not a folder" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_orphans_of_a_killed_runner_are_found_by_their_marker(tmp_path: Path) -> None:
    from ncucampaign.execute.process.groups import RUN_MARKER, kill_orphaned_group

    child = subprocess.Popen(["sleep", "60"], start_new_session=True, env={**os.environ, RUN_MARKER: "/runs/x"})
    try:
        # its environment is the marker's only once it has exec'd sleep (before, /proc shows the parent's)
        deadline = time.monotonic() + 30
        while not Path(f"/proc/{child.pid}/cmdline").read_bytes().startswith(b"sleep"):
            assert time.monotonic() < deadline, "sleep never started"
        assert kill_orphaned_group(child.pid, "/runs/other") == 0  # not this run's: left alone
        assert alive(child.pid)
        assert kill_orphaned_group(child.pid, "/runs/x") == 1
        child.wait(timeout=5)
        assert not alive(child.pid)
    finally:
        if child.poll() is None:
            child.kill()


def test_resume_keeps_the_runs_selection_and_its_own_copy_of_the_campaign(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(
        "- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  kernel_name: rmsnorm_kernel\n"
        "- name: c\n  kernel_name: typo_kernel\n"
    )
    assert run_cli("run", str(campaign), "--out", "runs", "--only", "a", "c", cwd=tmp_path).returncode == 1
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()
    campaign.write_text("not: [a campaign\n")  # edited since: resuming without FILE does not read it
    done = run_cli("run", "--resume", str(run_dir), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    assert {t["name"]: len(t["attempts"]) for t in manifest["targets"]} == {"a": 1, "c": 2}  # not b
    # a manifest pointing elsewhere reads nothing there, and a copy that is not the run's is refused
    secret = tmp_path / "secret.txt"
    secret.write_text("root:*:secret-line\n")
    manifest["campaign"]["source"] = str(secret)
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    (run_dir / "campaign.yaml").unlink()
    (run_dir / "campaign.yaml").symlink_to(secret)
    refused = run_cli("run", "--resume", str(run_dir), cwd=tmp_path)
    assert refused.returncode == 2 and "secret-line" not in refused.stdout + refused.stderr
    assert "name the campaign FILE to resume with" in refused.stderr
