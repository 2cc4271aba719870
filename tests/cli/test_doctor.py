"""`ncucampaign doctor` and the checks `run` makes before its first target: each check
against the fake ncu and stand-ins (no ncu, no nvidia-smi, no GPU, counters denied, a planted config
file, a read-only or full folder, a container's own filesystem), and the pure readings of each."""

from __future__ import annotations

import ctypes.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from ncucampaign.execute.attempt.refusals import PERMISSION_FIX
from ncucampaign.execute.doctor import (
    counters_check,
    disk_outcome,
    mount_of,
    stray_files,
    volume_outcome,
)
from tests.conftest import FAKE_NCU_DIR, fake_env, gone, load_manifest, logging_ncu, run_cli
from tests.execute.shared_campaigns import NSYS

PERMISSION = (
    "==PROF== Connected to process 12 (/usr/bin/python3)\n==ERROR== ERR_NVGPUCTRPERM - The user does not have "
    "permission to access NVIDIA GPU Performance Counters on the target device 0.\n"
)


def doctor(tmp_path: Path, *args: str, **env: str) -> tuple[int, dict]:
    done = run_cli("doctor", "--format", "json", *args, cwd=tmp_path, env=fake_env(**env))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["passed"] == (done.returncode == 0)
    return done.returncode, {c["name"]: c for c in data["checks"]}


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_every_check_passes_on_the_fake_machine(tmp_path: Path) -> None:
    code, checks = doctor(tmp_path, NCUCAMPAIGN_NSYS=str(NSYS))
    assert code == 0
    assert list(checks) == ["ncu", "report reader", "GPUs", "counters", "trace", "config files", "disk"]
    assert {c["state"] for c in checks.values()} == {"ok"}, checks
    assert "version 2025.3.1.0" in checks["ncu"]["detail"]
    assert checks["counters"]["detail"].startswith("one kernel profiled in ")
    assert "2: NVIDIA H200" in checks["GPUs"]["detail"]


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_text_output_ends_with_the_verdict_and_gives_each_fix(tmp_path: Path) -> None:
    done = run_cli("doctor", cwd=tmp_path, env=fake_env(FAKE_NCU_COUNTERS="denied"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "doctor: 1 of 7 checks fail: counters; 1 warn: trace"
    assert "ERR_NVGPUCTRPERM" in done.stdout and "NVreg_RestrictProfilingToAdminUsers=0" in done.stdout


@pytest.mark.slow  # a process of its own for the importer: not in the inner loop
def test_the_trace_check_says_which_tool_traces_and_why_not_nsys(tmp_path: Path) -> None:
    code, checks = doctor(tmp_path, NCUCAMPAIGN_NSYS=str(NSYS), FAKE_NSYS_IMPORTER="broken")
    trace = checks["trace"]
    assert code == 0 and trace["state"] == "warn" and "libdw.so.1" in trace["detail"], trace
    assert trace["detail"].startswith("by ncu: ") and "NCUCAMPAIGN_NSYS_LIBRARY_PATH" in trace["fix"]
    _, checks = doctor(tmp_path)  # the fake ncu has no Nsight Systems beside it
    assert checks["trace"]["state"] == "warn" and "no Nsight Systems at" in checks["trace"]["detail"]
    _, checks = doctor(tmp_path, NCUCAMPAIGN_NSYS="off")
    assert checks["trace"] == {**checks["trace"], "state": "ok", "detail": "by ncu: NCUCAMPAIGN_NSYS=off"}
    _, checks = doctor(tmp_path, NCUCAMPAIGN_NSYS=str(NSYS))
    assert checks["trace"]["state"] == "ok" and checks["trace"]["detail"] == f"by Nsight Systems: {NSYS}"


@pytest.mark.parametrize(
    ("knob", "said", "fixed"),
    [("denied", "ERR_NVGPUCTRPERM", "SYS_ADMIN"), ("library", "counter library did not load", "NVIDIA_DRIVER_CAP")],
)
@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_counters_without_access_fail_with_the_fix(tmp_path: Path, knob: str, said: str, fixed: str) -> None:
    code, checks = doctor(tmp_path, FAKE_NCU_COUNTERS=knob)
    assert code == 1 and checks["counters"]["state"] == "fail"
    assert said in checks["counters"]["detail"] and fixed in checks["counters"]["fix"], checks["counters"]


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_no_ncu_fails_and_skips_the_probe(tmp_path: Path) -> None:
    code, checks = doctor(tmp_path, "--ncu", "no-such-ncu")
    assert code == 1 and checks["ncu"]["state"] == "fail" and "--ncu PATH" in checks["ncu"]["fix"]
    assert checks["counters"]["state"] == "skip"


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_no_nvidia_smi_no_gpu_or_hidden_gpus_fail(tmp_path: Path) -> None:
    only_ncu = tmp_path / "bin"
    only_ncu.mkdir()
    (only_ncu / "ncu").symlink_to(FAKE_NCU_DIR / "ncu")
    env = fake_env()
    env["PATH"] = env["PATH"].replace(str(FAKE_NCU_DIR), str(only_ncu))
    if shutil.which("nvidia-smi", path=env["PATH"]):
        pytest.skip("a real nvidia-smi is on PATH")
    done = run_cli("doctor", "--format", "json", cwd=tmp_path, env=env)
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert done.returncode == 1 and "no NVIDIA driver here (nvidia-smi could not start" in checks["GPUs"]["detail"]
    assert checks["counters"]["state"] == "skip"
    code, checks = doctor(tmp_path, FAKE_NVIDIA_SMI_GPUS="0")
    assert code == 1 and checks["GPUs"]["detail"] == "nvidia-smi lists no GPU"
    code, checks = doctor(tmp_path, CUDA_VISIBLE_DEVICES="")
    assert code == 1 and "hides every GPU" in checks["GPUs"]["detail"]


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_a_stray_config_file_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    (tmp_path / "config.ncu-cfg").write_text("[Launch-and-attach]\n--launch-skip = 8\n")
    home = tmp_path / "home"
    (home / ".config" / "NVIDIA Corporation").mkdir(parents=True)
    (home / ".config" / "NVIDIA Corporation" / "ncu-kernel-renames.yaml").write_text("{}\n")
    code, checks = doctor(tmp_path, HOME=str(home))
    assert code == 0 and checks["config files"]["state"] == "warn"
    assert "config.ncu-cfg" in checks["config files"]["detail"]
    assert "ncu-kernel-renames.yaml" in checks["config files"]["detail"]


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_the_campaign_names_ncu_and_the_run_directories(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: a\n  kernel_name: k\n")
    code, checks = doctor(tmp_path, str(campaign))
    assert code == 0 and str(campaign.parent / "runs") in checks["disk"]["detail"]


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_inside_kubernetes_the_volume_is_checked(tmp_path: Path) -> None:
    _, checks = doctor(tmp_path, "--out", str(tmp_path / "runs"), KUBERNETES_SERVICE_HOST="10.0.0.1")
    mount, fstype = mount_of(tmp_path.resolve(), Path("/proc/self/mountinfo").read_text())
    assert checks["volume"] == {**checks["volume"], **vars(volume_outcome(tmp_path, mount, fstype, True))}


@pytest.mark.slow  # runs the CLI end to end
def test_run_stops_at_its_first_ncu_process_when_counters_are_denied(tmp_path: Path, write_campaign) -> None:
    """No probe of its own: the run's first ncu process (the shared run's discovery trace)
    meets the refusal, is recorded, and the run stops with doctor's fix; --resume finishes it."""
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  kernel_name: rmsnorm_kernel\n")
    calls, ncu = logging_ncu(tmp_path / "ncu-bin")
    env = fake_env(FAKE_NCU_COUNTERS="denied", NCUCAMPAIGN_NCU=str(ncu))
    done = run_cli("run", str(campaign), cwd=tmp_path, env=env)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "this machine cannot profile: ERR_NVGPUCTRPERM" in done.stderr and PERMISSION_FIX in done.stderr
    assert "Traceback" not in done.stderr
    profiling = [line for line in calls.read_text().splitlines() if "fake_app.py" in line]
    assert len(profiling) == 1, profiling  # one ncu process ran the application: no probe, no second target
    run_dir, manifest = load_manifest(campaign.parent / "runs")
    assert manifest["state"] == "interrupted" and {t["status"] for t in manifest["targets"]} <= {
        "pending",
        "interrupted",
    }
    (trace,) = manifest["shared_runs"]
    assert trace["status"] == "profiler_error" and "ERR_NVGPUCTRPERM" in trace["message"]  # recorded, not lost
    resumed = run_cli("run", "--resume", str(run_dir), cwd=tmp_path, env=fake_env(NCUCAMPAIGN_NCU=str(ncu)))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    _, manifest = load_manifest(campaign.parent / "runs")
    assert {t["status"] for t in manifest["targets"]} == {"ok"}


@pytest.mark.slow  # runs the CLI end to end
def test_a_run_alone_stops_at_the_first_target_that_meets_the_refusal(tmp_path: Path, write_campaign) -> None:
    """--no-share is what this is about: every target its own ncu process, the first one's refusal stops
    the others before they start (the test above meets it in the shared run's trace)."""
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  kernel_name: rmsnorm_kernel\n")
    campaign.write_text(campaign.read_text().replace("  retries: 0\n", "  retries: 2\n"))
    done = run_cli("run", str(campaign), "--no-share", cwd=tmp_path, env=fake_env(FAKE_NCU_COUNTERS="library"))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "counter library did not load" in done.stderr and "NVIDIA_DRIVER_CAPABILITIES" in done.stderr
    _, manifest = load_manifest(campaign.parent / "runs")
    a, b = manifest["targets"]
    assert a["status"] == "profiler_error" and len(a["attempts"]) == 1  # not retried (retries: 2)
    assert b["status"] == "pending" and not b["attempts"]


def test_run_notes_an_uncertain_failure_and_goes_on(tmp_path: Path, monkeypatch) -> None:
    """The one preflight every backend meets carries doctor's run checks."""
    from ncucampaign.errors import EnvironmentProblem
    from ncucampaign.execute import prepare
    from ncucampaign.execute.doctor_check import Check
    from ncucampaign.plan.expand import Plan
    from tests.conftest import invocation

    found = [Check("counters", "fail", "the probe did not finish in 60 s", "by hand", certain=False),
             Check("disk", "warn", "5.0 GiB free")]  # fmt: skip
    monkeypatch.setattr(prepare, "run_checks", lambda root: found)
    plan = Plan("camp", tmp_path / "camp.yaml", "ncu", (invocation("a"),))
    settings = prepare.RunSettings(runs_root=tmp_path, ncu_path=sys.executable, reader=None)  # type: ignore[arg-type]
    notes = prepare.preflight(plan, settings)
    assert notes == ["counters: the probe did not finish in 60 s", "disk: 5.0 GiB free"]
    found.append(Check("disk", "fail", "Read-only file system", "choose another --out"))
    with pytest.raises(EnvironmentProblem, match="disk: Read-only file system\n  fix: choose another --out"):
        prepare.preflight(plan, settings)
    monkeypatch.setenv("NCUCAMPAIGN_DOCTOR", "off")
    assert prepare.preflight(plan, settings) == []  # asked not to check: nothing raised


def test_counters_check_reads_ncu_output() -> None:
    ok = counters_check(0, '==PROF== Profiling "ncucampaign_probe": 0%....50%....100% - 1 pass\n', 1.7)
    assert ok.state == "ok" and ok.detail == "one kernel profiled in 1.7 s"
    denied = counters_check(1, PERMISSION, 2.0, admin_only=True)
    assert denied.state == "fail" and denied.certain and "RmProfilingAdminOnly: 1" in denied.detail
    assert denied.fix == PERMISSION_FIX
    busy = counters_check(1, "==ERROR== Profiling failed because a driver resource was unavailable.", 1.0)
    assert busy.certain and "dcgmi profile --pause" in busy.fix
    late = counters_check(None, "", 60.0)
    assert late.state == "fail" and not late.certain
    nothing = counters_check(0, "==WARNING== No kernels were profiled.\n", 1.0)
    assert nothing.state == "fail" and not nothing.certain and "No kernels were profiled" in nothing.detail
    no_gpu = counters_check(1, "probe: cuInit failed: CUDA_ERROR_NO_DEVICE\n==ERROR== The application returned", 1.0)
    assert "The application returned" in no_gpu.detail or "CUDA_ERROR_NO_DEVICE" in no_gpu.detail


def test_disk_outcome_reads_free_space_and_writability(tmp_path: Path) -> None:
    gib = 1 << 30
    assert disk_outcome(tmp_path, tmp_path, 50 * gib, None).state == "ok"
    assert disk_outcome(tmp_path, tmp_path, 5 * gib, None).state == "warn"
    low = disk_outcome(tmp_path / "runs", tmp_path, gib // 2, None)
    assert low.state == "fail" and not low.certain and f"(in {tmp_path})" in low.detail
    read_only = disk_outcome(tmp_path, tmp_path, 50 * gib, "Read-only file system")
    assert read_only.state == "fail" and read_only.certain and "Read-only file system" in read_only.detail


MOUNTINFO = """\
22 1 0:21 / / rw,relatime - overlay overlay rw,lowerdir=/a
30 22 0:40 / /runs rw,relatime - nfs4 10.0.0.2:/export rw,vers=4.1
31 22 0:41 / /scratch rw,relatime - tmpfs tmpfs rw
32 22 0:42 / /data rw,relatime - ext4 /dev/sdb1 rw
"""


def test_mount_of_finds_the_longest_mount_point() -> None:
    assert mount_of(Path("/runs/camp"), MOUNTINFO) == ("/runs", "nfs4")
    assert mount_of(Path("/runsx"), MOUNTINFO) == ("/", "overlay")
    assert mount_of(Path("/scratch"), MOUNTINFO) == ("/scratch", "tmpfs")


def test_volume_outcome_wants_a_shared_filesystem() -> None:
    assert volume_outcome(Path("/runs/c"), "/runs", "nfs4", True).state == "ok"
    own = volume_outcome(Path("/work"), "/", "overlay", True)
    assert own.state == "fail" and "other pods cannot see it" in own.detail and "ReadWriteMany" in own.fix
    assert volume_outcome(Path("/scratch"), "/scratch", "tmpfs", True).state == "fail"
    assert volume_outcome(Path("/data"), "/data", "ext4", True).state == "warn"
    assert volume_outcome(Path("/runs"), "/runs", "nfs4", False).state == "fail"


def test_stray_files_lists_what_ncu_would_read(tmp_path: Path) -> None:
    assert stray_files([tmp_path]).state == "ok"
    (tmp_path / "ncu-kernel-renames.yaml").write_text("{}\n")
    found = stray_files([tmp_path, tmp_path / "missing"])
    assert found.state == "warn" and str(tmp_path / "ncu-kernel-renames.yaml") in found.detail


# the driver's library, not ncu nor nvidia-smi: the README's Try block puts the fakes of both on PATH before .ci/run
@pytest.mark.skipif(ctypes.util.find_library("cuda") is None, reason="the probe application needs a GPU and its driver")
def test_the_probe_application_runs_alone() -> None:  # pragma: no cover - on a GPU machine
    import subprocess

    done = subprocess.run([sys.executable, "-m", "ncucampaign.execute.probe_app"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def stand_in(folder: Path, name: str, script: str) -> Path:
    """An executable `name` in `folder` (made if needed) running the shell `script`."""
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return path


def with_first(folder: Path, **extra: str) -> dict[str, str]:
    env = fake_env(XDG_CACHE_HOME=str(folder.parent / "cache"), **extra)  # ncu asked, not cached
    env["PATH"] = f"{folder}:{env['PATH']}"
    return env


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_an_ncu_that_leaves_a_child_holding_its_output_is_read_and_the_child_stopped(tmp_path: Path) -> None:
    """Before the fix: doctor took 75.8 s, said "--version printed no version" and left the child running."""
    pids = tmp_path / "child.pid"
    fake = FAKE_NCU_DIR / "ncu"
    stand_in(
        tmp_path / "bin", "ncu", f'if [ "$1" = --version ]; then sleep 300 & echo $! > {pids}; fi\nexec {fake} "$@"'
    )
    _, checks = doctor(tmp_path, **with_first(tmp_path / "bin"))
    assert checks["ncu"]["state"] == "ok" and "version 2025.3.1.0" in checks["ncu"]["detail"], checks["ncu"]
    assert gone(int(pids.read_text())), "the child --version left is still running"


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
@pytest.mark.parametrize("command", ["validate", "plan", "run", "doctor"])
def test_a_version_line_that_is_not_utf8_is_no_crash(tmp_path: Path, write_campaign, command: str) -> None:
    """Before the fix: `Version 2025.3.1.0 \\351` made validate, plan, run and doctor exit 70 (UnicodeDecodeError)."""
    fake = FAKE_NCU_DIR / "ncu"
    stand_in(
        tmp_path / "bin",
        "ncu",
        f'if [ "$1" = --version ]; then printf "Version 2025.3.1.0 \\351\\n"; exit 0; fi\nexec {fake} "$@"',
    )
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    done = run_cli(
        command, *([] if command == "doctor" else [str(campaign)]), cwd=tmp_path, env=with_first(tmp_path / "bin")
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
@pytest.mark.parametrize("command", ["run", "doctor"])
def test_an_nvidia_smi_printing_random_bytes_is_no_crash(tmp_path: Path, write_campaign, command: str) -> None:
    stand_in(tmp_path / "bin", "nvidia-smi", "printf '\\377\\376\\351, \\200\\201, x\\n\\333'")
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    done = run_cli(
        command, *([] if command == "doctor" else [str(campaign)]), cwd=tmp_path, env=with_first(tmp_path / "bin")
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_an_ncu_printing_without_end_on_version_is_cut_at_the_bound(tmp_path: Path) -> None:
    """Before the fix: 200 MB on --version took 895 MB of memory; what a probe keeps is bounded."""
    fake = FAKE_NCU_DIR / "ncu"
    stand_in(tmp_path / "bin", "ncu", f'if [ "$1" = --version ]; then exec yes Version; fi\nexec {fake} "$@"')
    code, checks = doctor(tmp_path, **with_first(tmp_path / "bin"))
    assert code == 1 and "ncu printed more than 16 MiB" in checks["ncu"]["detail"], checks["ncu"]


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_a_hanging_nvidia_smi_is_named_as_hanging_not_as_a_missing_driver(tmp_path: Path, monkeypatch) -> None:
    from ncucampaign.execute import doctor as doctor_module
    from ncucampaign.execute.process import short

    stand_in(tmp_path / "bin", "nvidia-smi", f"echo $$ > {tmp_path / 'smi.pid'}\nexec sleep 300")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{fake_env()['PATH']}")
    monkeypatch.setattr(short, "PROBE_TIMEOUT_S", 0.5)
    check = doctor_module.gpus_check({})
    assert check.state == "fail" and check.detail == "nvidia-smi did not answer in 0.5 s", check
    assert "no NVIDIA driver" not in check.detail and "driver" in check.fix
    assert gone(int((tmp_path / "smi.pid").read_text()))  # its process group was stopped


def test_a_warning_is_named_in_the_verdict_never_every_check_passes(tmp_path: Path) -> None:
    """Round 7, item 11: 'doctor: every check passes (7)' was printed under a check that showed warn."""
    (tmp_path / "config.ncu-cfg").write_text("[Launch-and-attach]\n--launch-skip = 8\n")
    done = run_cli("doctor", cwd=tmp_path, env=fake_env(HOME=str(tmp_path), NCUCAMPAIGN_NSYS=str(NSYS)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "doctor: no check fails (7); 1 warn: config files", done.stdout
