"""The real CLI, end to end, against the fake ncu (tests/fake_ncu/ncu) on PATH.

Each test runs `python -m ncucampaign run` in a subprocess, as a user would, and then reads the run
directory it made.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import REPORT, ROOT, alive, fake_env, load_manifest, run_cli, target

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups via /proc"),
    pytest.mark.slow,
]  # slow: runs the CLI end to end


@pytest.mark.versions
def test_successful_campaign_fills_the_run_directory(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(
        """
        - name: rmsnorm
          kernel_name: rmsnorm_kernel
        - name: two_steps
          nvtx_include: decode_step/
          range_filter: "::(4|8)"
          kernel_name: rmsnorm_kernel
          launch_count: 8
        """
    )
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    assert manifest["state"] == "finished"
    assert manifest["campaign"]["sha256"] == hashlib.sha256(campaign.read_bytes()).hexdigest()
    assert (run_dir / "campaign.yaml").read_text() == campaign.read_text()
    assert [t["name"] for t in json.loads((run_dir / "plan.json").read_text())["invocations"]] == [
        "rmsnorm",
        "two_steps",
    ]
    for name, results in (("rmsnorm", 1), ("two_steps", 8)):
        record = target(manifest, name)
        assert record["status"] == "ok"
        assert record["report"]["results"] == results
        report = run_dir / record["report"]["path"]
        assert record["report"]["sha256"] == hashlib.sha256(report.read_bytes()).hexdigest()
        assert record["report"]["bytes"] == report.stat().st_size
        assert record["argv"][record["argv"].index("-o") + 1] == str(report)  # named whole, suffix and all
        assert "==PROF== Report:" in (run_dir / record["log"]).read_text()
        assert len(record["attempts"]) == 1 and record["attempts"][0]["exit_code"] == 0
    assert "--kill" in target(manifest, "rmsnorm")["argv"]
    assert "[1/2] ok" in done.stdout and "[2/2] ok" in done.stdout
    jsonschema.validate(manifest, json.loads((ROOT / "schemas" / "manifest.schema.json").read_text()))


def test_nothing_profiled_is_not_success_and_not_retried(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(
        """
        - name: typo
          kernel_name: rmsnrom_kernel
          retries: 3
        """
    )
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 1
    _, manifest = load_manifest(tmp_path / "runs")
    record = target(manifest, "typo")
    assert record["status"] == "no_kernels"
    assert len(record["attempts"]) == 1
    assert record["report"] is None


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ("sections: NoSuchSection", "NCU009: section 'NoSuchSection' is not listed"),
        ("kernel_name: 'regex:(unclosed'", "NCU005: the regex does not compile"),
    ],
)
def test_usage_errors_validate_is_sure_of_are_never_started(
    tmp_path: Path, write_campaign, option: str, expected: str
) -> None:
    """What ncu is sure to refuse (validate's errors) is closed with validate's words and no ncu start, retries or
    not; before, ncu was started once to refuse it, and in a shared pool its trace refused them all."""
    campaign = write_campaign(f"- name: bad\n  {option}\n  retries: 3\n")
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 1
    _, manifest = load_manifest(tmp_path / "runs")
    record = target(manifest, "bad")
    assert record["status"] == "usage_error"
    assert record["message"].startswith("not started: validate refuses it (") and expected in record["message"]
    assert record["attempts"] == []


@pytest.mark.versions
def test_application_failure_keeps_every_report(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(
        """
        - name: fails
          kernel_name: rmsnorm_kernel
          kill: false
          args: [--exit-code, "3"]
          retries: 1
        """
    )
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 1
    run_dir, manifest = load_manifest(tmp_path / "runs")
    record = target(manifest, "fails")
    assert record["status"] == "app_failed"
    assert [a["exit_code"] for a in record["attempts"]] == [3, 3]
    first, second = record["attempts"]
    assert first["report"] == f"reports/fails.attempt-1{REPORT}"
    assert second["report"] == f"reports/fails{REPORT}"
    assert (run_dir / first["report"]).is_file() and (run_dir / second["report"]).is_file()
    assert record["report"]["path"] == f"reports/fails{REPORT}"


def test_application_crash_is_named(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: crash\n  kernel_name: rmsnorm_kernel\n  kill: false\n  args: [--crash]\n")
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 1
    _, manifest = load_manifest(tmp_path / "runs")
    record = target(manifest, "crash")
    assert record["status"] == "app_failed"
    assert "error code 6" in record["message"] and "SIGABRT" in record["message"]


def test_flaky_failure_succeeds_on_retry(tmp_path: Path, write_campaign) -> None:
    flag = tmp_path / "flaky-flag"
    campaign = write_campaign(
        f"""
        - name: flaky
          kernel_name: rmsnorm_kernel
          args: [--flaky-file, {json.dumps(str(flag))}]
          retries: 2
        """
    )
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    record = target(manifest, "flaky")
    assert [a["status"] for a in record["attempts"]] == ["app_failed", "ok"]
    assert record["status"] == "ok"
    assert "retrying" in done.stdout


def test_hanging_application_is_stopped_and_the_campaign_goes_on(tmp_path: Path, write_campaign) -> None:
    pids = tmp_path / "pids"
    campaign = write_campaign(
        f"""
        - name: hangs
          kernel_name: rmsnorm_kernel
          launch_count: 100
          args: [--hang-at-step, "3", --sleeper-child, --pid-file, {json.dumps(str(pids))}]
          timeout: 2
        - name: after
          kernel_name: rmsnorm_kernel
        """
    )
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 1
    _, manifest = load_manifest(tmp_path / "runs")
    hung = target(manifest, "hangs")
    assert hung["status"] == "timed_out"
    assert hung["attempts"][0]["signals_sent"] == ["SIGINT"]  # ncu wrote its report and exited on SIGINT
    assert hung["attempts"][0]["exit_code"] == -2
    assert hung["report"] is not None
    assert target(manifest, "after")["status"] == "ok"
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 2  # the application and its worker
    assert not [pid for pid in started if alive(pid)]


def test_stuck_ncu_and_stubborn_application_are_killed(tmp_path: Path, write_campaign) -> None:
    """ncu ignores SIGINT and the application ignores SIGINT and SIGTERM: SIGTERM ends ncu (leaving
    the application behind, as observed), and the group sweep kills the rest."""
    pids = tmp_path / "pids"
    campaign = write_campaign(
        f"""
        - name: stuck
          kernel_name: rmsnorm_kernel
          launch_count: 100
          args: [--hang-at-step, "1", --stubborn, --pid-file, {json.dumps(str(pids))}]
          timeout: 1
          stop_grace: 0.5
        """
    )
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=fake_env(FAKE_NCU_IGNORE_SIGINT="1"))
    assert done.returncode == 1
    _, manifest = load_manifest(tmp_path / "runs")
    attempt = target(manifest, "stuck")["attempts"][0]
    assert attempt["status"] == "timed_out"
    assert attempt["signals_sent"][:2] == ["SIGINT", "SIGTERM"]
    assert attempt["leftovers_killed"] >= 1
    assert not [pid for pid in map(int, pids.read_text().split()) if alive(pid)]


def test_interrupting_the_runner_keeps_a_complete_manifest(tmp_path: Path, write_campaign) -> None:
    pids = tmp_path / "pids"
    campaign = write_campaign(
        f"""
        - name: first
          kernel_name: rmsnorm_kernel
        - name: hangs
          kernel_name: rmsnorm_kernel
          launch_count: 100
          args: [--hang-at-step, "2", --pid-file, {json.dumps(str(pids))}]
        - name: never
          kernel_name: rmsnorm_kernel
        """
    )
    runner = subprocess.Popen(
        [sys.executable, "-m", "ncucampaign", "run", str(campaign), "--out", "runs", "--no-share"],
        cwd=tmp_path,
        env=fake_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = tmp_path / "runs" / "camp" / "latest" / "logs" / "hangs.log"
    deadline = time.monotonic() + 30
    while "hanging at step 2" not in (log.read_text() if log.is_file() else ""):  # the application hangs now
        assert time.monotonic() < deadline, "the application never reached its hang"
        time.sleep(0.05)
    runner.send_signal(signal.SIGINT)
    out, err = runner.communicate(timeout=30)
    assert runner.returncode == 130, out + err
    _, manifest = load_manifest(tmp_path / "runs")
    assert manifest["state"] == "interrupted"
    assert [t["status"] for t in manifest["targets"]] == ["ok", "interrupted", "pending"]
    assert not [pid for pid in map(int, pids.read_text().split()) if alive(pid)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("application: {command: [python3]\ntargets: []\n", "camp.yaml:2: (top level): invalid YAML"),
        (
            "application: {command: x}\ntargets:\n  - name: a\n    kernal_name: k\n",
            "camp.yaml:4: targets[0].kernal_name: unknown key 'kernal_name'; did you mean 'kernel_name'?",
        ),
        (
            "application: {command: x}\ntargets:\n  - name: a\n    launch_count: many\n",
            "camp.yaml:4: targets[0].launch_count: expected a whole number",
        ),
        (
            "application: {command: x}\ntargets:\n  - name: a\n  - name: a\n",
            "camp.yaml:4: targets[1].name: name 'a' is already used by targets[0]",
        ),
        (
            "application: {command: x}\ntargets:\n  - name: a\n    launch_count: 0\n",
            "camp.yaml:4: targets[0].launch_count: must be at least 1",
        ),
        ("application: {command: x}\ntargets: []\n", "camp.yaml:2: targets: the target list is empty"),
        (
            "application: {command: x}\ntargets:\n  - name: ../../etc/x\n",
            "camp.yaml:3: targets[0].name: a name may hold",
        ),
    ],
)
def test_malformed_campaign_exits_2_with_file_and_line(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "camp.yaml").write_text(text)
    for command in ("validate", "plan", "run"):
        done = run_cli(command, "camp.yaml", cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert expected in done.stderr
        assert "Traceback" not in done.stderr + done.stdout
    assert not (tmp_path / "runs").exists()


def test_missing_ncu_is_an_environment_problem(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: a\n  kernel_name: k\n")
    env = fake_env(PATH="/nonexistent")
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=env)
    assert done.returncode == 3
    assert "ncu not found" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_only_selects_targets_and_suggests_names(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(
        """
        - name: norm_{range_filter}
          nvtx_include: decode_step/
          kernel_name: rmsnorm_kernel
          matrix: {range_filter: ["::2", "::3"]}
        - name: other
          kernel_name: rmsnorm_kernel
        """
    )
    wrong = run_cli("run", str(campaign), "--only", "norm_2x", cwd=tmp_path)
    assert wrong.returncode == 2 and "did you mean 'norm_2'" in wrong.stderr
    done = run_cli("run", str(campaign), "--only", "norm_{range_filter}", "--out", "runs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    assert [t["name"] for t in manifest["targets"]] == ["norm_2", "norm_3"]


def test_dry_run_creates_nothing(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    done = run_cli("run", str(campaign), "--dry-run", "--out", "runs", cwd=tmp_path, env=fake_env(PATH="/nonexistent"))
    assert done.returncode == 0
    assert "--kernel-name rmsnorm_kernel" in done.stdout
    assert not (tmp_path / "runs").exists()


def test_live_output_shows_ncu_lines(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    done = run_cli("run", str(campaign), "--out", "runs", "--show-output", cwd=tmp_path)
    assert done.returncode == 0
    assert '==PROF== Profiling "rmsnorm_kernel"' in done.stdout


def test_python_m_and_version(tmp_path: Path) -> None:
    done = run_cli("--version", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("ncucampaign ")


def test_latest_points_at_the_newest_run(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    for _ in range(2):
        assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 0
    runs = sorted(p.name for p in (tmp_path / "runs" / "camp").iterdir() if p.name != "latest")
    assert len(runs) == 2
    assert os.readlink(tmp_path / "runs" / "camp" / "latest") == runs[-1]
