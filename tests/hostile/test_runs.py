"""Runs: damaged reports, full and read-only disks, signal storms, hostile run directories
and output paths. Every case ends with a clear message and exit 1, 2, 3 or 130, never 70, and
loses nothing already recorded."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ncucampaign.cli import main
from tests.conftest import (
    FAKE_NCU_DIR,
    REPORT,
    ROOT,
    alive,
    fake_env,
    load_manifest,
    run_cli,
    signal_handlers_restored,
    target,
)
from tests.execute.shared_campaigns import TRACE_TARGETS

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups via /proc"),
    pytest.mark.slow,
]  # slow: runs the CLI end to end


def no_crash(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr


def test_1_a_truncated_report_fails_its_target_and_the_campaign_goes_on(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(
        "- name: cut\n  kernel_name: rmsnorm_kernel\n- name: next\n  kernel_name: rmsnorm_kernel\n"
    )
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=fake_env(FAKE_NCU_TRUNCATE="0.5"))
    no_crash(done)
    assert done.returncode == 1
    run_dir, manifest = load_manifest(tmp_path / "runs")
    for name in ("cut", "next"):  # every target ran: a damaged report no longer stops the campaign
        record = target(manifest, name)
        assert record["status"] == "profiler_error" and "cannot be read" in record["message"], record
        assert record["report"] is None  # never `ok` with `report: null`
        assert record["attempts"][-1]["report"] == f"reports/{name}{REPORT}"  # the evidence is kept
    assert manifest["state"] == "finished"
    resumed = run_cli("run", str(campaign), "--out", "runs", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr  # --resume reruns them
    _, manifest = load_manifest(tmp_path / "runs")
    assert [len(t["attempts"]) for t in manifest["targets"]] == [2, 2]
    assert (run_dir / "reports" / f"cut.attempt-1{REPORT}").is_file()


def test_1_summarize_says_a_damaged_report_is_damaged(tmp_path: Path) -> None:
    data = (ROOT / "tests" / "fixtures" / "reports" / "name_exact.ncu-rep").read_bytes()
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(data[: len(data) // 2])
    empty = tmp_path / "empty.ncu-rep"
    empty.write_bytes(b"")
    for report in (cut, empty):
        done = run_cli("summarize", str(report), cwd=tmp_path)
        no_crash(done)
        assert done.returncode == 2 and report.name in done.stderr
        assert "pip install" not in done.stderr  # the reader is installed: that is not the problem


@pytest.fixture
def small_disk(tmp_path: Path):
    """A small tmpfs: room for a campaign's files and a few reports (each fixture report is 80 KiB,
    16 KiB compressed as ncu 2026.3 writes it)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    size = "600k" if REPORT == ".ncu-rep" else "160k"
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True
    ).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_4_a_full_disk_is_exit_3_and_resume_finishes(tmp_path: Path, write_campaign, small_disk: Path) -> None:
    targets = "\n".join(f"- name: t{i}\n  kernel_name: rmsnorm_kernel" for i in range(12))
    campaign = write_campaign(targets, defaults='share: "off"')  # one report after another fills the disk
    done = run_cli("run", str(campaign), "--out", str(small_disk), cwd=tmp_path)
    no_crash(done)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "No space left on device" in done.stderr and str(small_disk) in done.stderr
    _, manifest = load_manifest(small_disk)
    assert manifest["state"] in ("running", "interrupted")
    assert [t["status"] for t in manifest["targets"]].count("ok") >= 1  # what was done is recorded
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_disk)], check=True)
    resumed = run_cli("run", str(campaign), "--out", str(small_disk), "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    _, manifest = load_manifest(small_disk)
    assert manifest["state"] == "finished" and {t["status"] for t in manifest["targets"]} == {"ok"}


def test_4_a_disk_that_fills_during_the_nsys_trace_is_exit_3_and_resume_finishes(
    tmp_path: Path, write_campaign, small_disk: Path
) -> None:
    """The trace by Nsight Systems writes its collection, report and SQLite export in the run's
    reports folder: a disk that fills there is the same exit 3 as anywhere else, never a trace that
    silently stands in for nothing."""
    subprocess.run(["mount", "-o", "remount,size=60k", str(small_disk)], check=True)  # full within the export
    campaign = write_campaign(TRACE_TARGETS)
    nsys = {"NCUCAMPAIGN_NSYS": str(ROOT / "tests" / "fake_nsys" / "host" / "target-linux-x64" / "nsys")}
    done = run_cli("run", str(campaign), "--out", str(small_disk), cwd=tmp_path, env=fake_env(**nsys))
    no_crash(done)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "No space left on device" in done.stderr and str(small_disk) in done.stderr
    _, manifest = load_manifest(small_disk)
    assert manifest["shared_runs"][0]["argv"][1] == "profile"  # the nsys trace was under way
    assert "ok" not in {t["status"] for t in manifest["targets"]}
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
    resumed = run_cli("run", str(campaign), "--out", str(small_disk), "--resume", cwd=tmp_path, env=fake_env(**nsys))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    _, manifest = load_manifest(small_disk)
    assert manifest["state"] == "finished" and {t["status"] for t in manifest["targets"]} == {"ok"}


def test_4_the_next_start_says_the_last_run_ended_with_the_disk_full(
    tmp_path: Path, write_campaign, small_disk: Path
) -> None:
    """Before the fix: a full disk left the manifest saying `running`, and the next start said nothing."""
    targets = "\n".join(f"- name: t{i}\n  kernel_name: rmsnorm_kernel" for i in range(12))
    campaign = write_campaign(targets, defaults='share: "off"')
    assert run_cli("run", str(campaign), "--out", str(small_disk), cwd=tmp_path).returncode == 3
    stopped = (small_disk / "camp" / "latest").resolve()
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_disk)], check=True)
    again = run_cli("run", str(campaign), "--out", str(small_disk), cwd=tmp_path)
    no_crash(again)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"warning: the last run {stopped} did not finish (it ended " in again.stderr, again.stderr
    assert "No space left on device" in again.stderr and f"run --resume {stopped}` finishes it" in again.stderr
    quiet = run_cli("run", str(campaign), "--out", str(small_disk), cwd=tmp_path)
    assert quiet.returncode == 0 and "did not finish" not in quiet.stderr  # the last one finished


def test_4_a_read_only_run_directory_is_exit_3(tmp_path: Path, write_campaign, small_disk: Path) -> None:
    campaign = write_campaign("- name: a\n  kernel_name: typo_kernel\n")
    assert run_cli("run", str(campaign), "--out", str(small_disk), cwd=tmp_path).returncode == 1
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    run_dir = (small_disk / "camp" / "latest").resolve()
    for command in (("run", str(campaign), "--out", str(small_disk), "--resume"), ("report", str(run_dir))):
        done = run_cli(*command, cwd=tmp_path)
        no_crash(done)
        assert done.returncode == 3, command
        # run's own checks (doctor's disk check) stop it first, naming the run directories' root
        where = small_disk if command[0] == "run" else run_dir
        assert "Read-only file system" in done.stderr and str(where) in done.stderr


def start(tmp_path: Path, campaign: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ncucampaign", "run", str(campaign), "--out", "runs"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(tmp_path: Path, check, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            _, manifest = load_manifest(tmp_path / "runs")
            if check(manifest):
                return manifest
        except (FileNotFoundError, json.JSONDecodeError, StopIteration, IndexError, KeyError):
            pass
        time.sleep(0.05)
    raise AssertionError("the run never reached the state waited for")


def ncu_running(manifest: dict) -> bool:
    attempts = manifest["targets"][0]["attempts"]
    return bool(attempts and attempts[-1]["process_group"])


@pytest.mark.parametrize("flood_s", [0.0, 0.5])
def test_5_a_storm_of_sigints_ends_the_run_promptly(tmp_path: Path, write_campaign, flood_s: float) -> None:
    """A burst of 10 SIGINTs, or as many as can be sent in half a second: the runner used to deadlock
    (a lock taken inside the signal handler, re-entered by the next signal) or die of RecursionError."""
    campaign = write_campaign("- name: slow\n  kernel_name: rmsnorm_kernel\n  launch_count: 8\n")
    runner = start(tmp_path, campaign, fake_env(FAKE_NCU_SECONDS_PER_KERNEL="2"))
    wait_for(tmp_path, ncu_running)
    sent, end = 0, time.monotonic() + flood_s
    while sent < 10 or time.monotonic() < end:
        try:
            os.kill(runner.pid, signal.SIGINT)
        except ProcessLookupError:
            break
        sent += 1
    try:
        out, err = runner.communicate(timeout=60)
    finally:
        runner.kill()  # a deadlocked runner (the defect) must not outlive the test
    assert runner.returncode == 130, out + err
    assert "Traceback" not in err
    _, manifest = load_manifest(tmp_path / "runs")
    assert manifest["state"] == "interrupted" and manifest["targets"][0]["status"] == "interrupted"


def test_an_interrupted_run_says_how_to_finish_it_and_so_does_the_next_run(tmp_path: Path, write_campaign) -> None:
    """Before the fix: a Ctrl-C ended with 130 and no line said that `--resume` finishes the run; the next
    run of the campaign did not mention it either."""
    campaign = write_campaign("- name: slow\n  kernel_name: rmsnorm_kernel\n  launch_count: 8\n")
    runner = start(tmp_path, campaign, fake_env(FAKE_NCU_SECONDS_PER_KERNEL="2"))
    wait_for(tmp_path, ncu_running)
    runner.send_signal(signal.SIGINT)
    try:
        _, err = runner.communicate(timeout=60)
    finally:
        runner.kill()
    stopped = (tmp_path / "runs" / "camp" / "latest").resolve()
    assert runner.returncode == 130
    assert f"interrupted: `ncucampaign run --resume {stopped}` finishes the run" in err, err
    again = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert f"the last run {stopped} was interrupted; `ncucampaign run --resume {stopped}` finishes it" in again.stderr


def test_5_sigint_during_start_up_is_no_traceback(tmp_path: Path) -> None:
    """Ctrl-C at any moment of start-up (imports, parsing, loading, the run's set-up) ends quietly.
    The driver does what pip's console-script wrapper does. (A signal while the interpreter itself is
    still starting, before any ncucampaign code runs, shows Python's own traceback: nothing in the
    package can run that early; that window is now the import of two tiny modules.)"""
    campaign = tmp_path / "camp.yaml"
    # An application that outlasts the longest delay: with `true` the whole run could end (exit 1, its
    # target no_kernels) before a late signal came, once start-up got faster.
    campaign.write_text('application: {command: ["sleep", "30"]}\ntargets: [{name: a}]\n')
    driver = (
        "import sys; from ncucampaign._entry import main; print('ready', flush=True); "
        f"sys.argv = ['ncucampaign', 'run', {str(campaign)!r}, '--out', 'runs']; sys.exit(main())"
    )
    for delay in (0.01, 0.03, 0.06, 0.1, 0.2, 0.4):
        runner = subprocess.Popen(
            [sys.executable, "-c", driver], cwd=tmp_path, env=fake_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert runner.stdout is not None and runner.stdout.readline() == b"ready\n"
        time.sleep(delay)  # the point of the test: a signal at each moment of start-up
        runner.send_signal(signal.SIGINT)
        _, err = runner.communicate(timeout=60)
        assert b"Traceback" not in err, (delay, err)
        assert runner.returncode == 130, (delay, runner.returncode, err)


def test_a_python_without_the_dependencies_says_so_in_one_line(tmp_path: Path) -> None:
    """The package started from a Python that lacks what pyproject.toml installs (`-S`: no site-packages, as a
    GPU box's system Python next to the venv it was installed into): one line naming what is missing and for
    which Python, exit 3, no traceback."""
    env = fake_env(PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-S", "-m", "ncucampaign", "validate", "camp.yaml"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert "it needs is not installed for" in done.stderr and sys.executable in done.stderr, done.stderr


@pytest.mark.parametrize("inherited", ["ignored", "default"])
def test_40_sigint_during_a_probe_stops_the_command(tmp_path: Path, write_campaign, inherited: str) -> None:
    """A Ctrl-C while ncu --version is asked (before the run directory exists) stops the command with
    130, also when SIGINT came in ignored (a background job of a script): it was lost, and the run
    went on to finish every target with exit 0."""
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    probing, ncu = tmp_path / "probing", tmp_path / "ncu-bin" / "ncu"
    ncu.parent.mkdir()
    ncu.write_text(
        f'#!/bin/sh\nif [ "$1" = --version ]; then touch {probing}; exec sleep 20; fi\nexec {FAKE_NCU_DIR / "ncu"} "$@"\n'
    )
    ncu.chmod(0o755)
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if inherited == "ignored" else None
    runner = subprocess.Popen(
        [sys.executable, "-m", "ncucampaign", "run", str(campaign), "--out", "runs"],
        cwd=tmp_path,
        env=fake_env(NCUCAMPAIGN_NCU=str(ncu), XDG_CACHE_HOME=str(tmp_path / "cache")),  # asked, not cached
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignore,
    )
    try:
        deadline = time.monotonic() + 60
        while not probing.exists() and runner.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert probing.exists(), runner.communicate()
        runner.send_signal(signal.SIGINT)
        out, err = runner.communicate(timeout=15)  # well before the probe's 20 s
    finally:
        runner.kill()
    assert runner.returncode == 130, out + err
    assert "Traceback" not in err and "interrupted" in err


@pytest.mark.parametrize("where", ["commands", "loader", "run-setup"])
def test_5_keyboard_interrupt_anywhere_inside_main_is_exit_130(
    tmp_path: Path, write_campaign, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    import importlib

    from ncucampaign import _entry

    def interrupt(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    if where == "commands":
        monkeypatch.setattr(importlib, "import_module", interrupt)
    elif where == "loader":
        monkeypatch.setattr("ncucampaign.commands.parts.common.load_campaign", interrupt)
    else:
        monkeypatch.setattr("ncucampaign.commands.run.open_run", interrupt)
    monkeypatch.setattr(sys, "argv", ["ncucampaign", "run", str(campaign), "--out", str(tmp_path / "runs")])
    monkeypatch.setenv("PATH", fake_env()["PATH"])
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # _entry.main replaces it
    handlers = {number: signal.getsignal(number) for number in _entry.STOPS}
    try:
        assert _entry.main() == 130
    finally:  # main leaves SIGINT, SIGTERM and SIGHUP ignored, as a process about to exit: later tests need them
        for number, handler in handlers.items():
            signal.signal(number, handler)
    assert "interrupted" in capsys.readouterr().err


def test_6_sigterm_while_waiting_to_retry_starts_no_new_attempt(tmp_path: Path, write_campaign) -> None:
    flag = tmp_path / "flaky"
    campaign = write_campaign(
        f"- name: flaky\n  kernel_name: rmsnorm_kernel\n  retries: 2\n  retry_delay: 60\n"
        f"  args: [--flaky-file, {json.dumps(str(flag))}]\n"
    )
    runner = start(tmp_path, campaign, fake_env())
    wait_for(tmp_path, lambda m: m["targets"][0]["attempts"] and m["targets"][0]["attempts"][0]["ended_at"])
    runner.send_signal(signal.SIGTERM)
    out, err = runner.communicate(timeout=30)  # well before the 60 s back-off
    assert runner.returncode == 130, out + err
    _, manifest = load_manifest(tmp_path / "runs")
    record = target(manifest, "flaky")
    assert [a["status"] for a in record["attempts"]] == ["app_failed"]
    assert record["status"] == "interrupted" and "before attempt 2 started" in record["message"]


def test_6_a_stop_just_after_an_attempt_ended_still_closes_the_target_interrupted(
    tmp_path: Path, write_campaign, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stop of test 6 landing after the failed attempt was recorded, before the retry was decided (CI
    met it once): the target was left app_failed, as if its retries were spent."""
    from ncucampaign.execute.attempt import attempts

    recorded = attempts._TargetAttempts._record

    def record_then_stop(self: attempts._TargetAttempts, *args: object) -> None:
        recorded(self, *args)  # type: ignore[arg-type]
        self.stop.request(1)  # what SIGTERM's handler does

    monkeypatch.setattr(attempts._TargetAttempts, "_record", record_then_stop)
    monkeypatch.setenv("PATH", fake_env()["PATH"])
    monkeypatch.setenv("FAKE_NCU_REPORTS", fake_env()["FAKE_NCU_REPORTS"])
    campaign = write_campaign(
        f"- name: flaky\n  kernel_name: rmsnorm_kernel\n  retries: 2\n  retry_delay: 60\n"
        f"  args: [--flaky-file, {json.dumps(str(tmp_path / 'flaky'))}]\n"
    )
    with contextlib.redirect_stdout(io.StringIO()), signal_handlers_restored():
        code = main(["run", str(campaign), "--out", str(tmp_path / "runs")])
    record = target(load_manifest(tmp_path / "runs")[1], "flaky")
    assert [a["status"] for a in record["attempts"]] == ["app_failed"]
    assert record["status"] == "interrupted" and "before attempt 2 started" in record["message"], record
    assert code == 130


@pytest.mark.parametrize("refusal", ["other-campaign", "corrupt-manifest"])
def test_7_a_refused_resume_rewrites_nothing(tmp_path: Path, write_campaign, refusal: str) -> None:
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 0
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()
    if refusal == "corrupt-manifest":
        (run_dir / "manifest.json").write_text("{not json")
        resumed_with = campaign
    else:
        resumed_with = write_campaign("- name: b\n  kernel_name: rmsnorm_kernel\n", name="other.yaml")
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    done = run_cli("run", str(resumed_with), "--resume", str(run_dir), cwd=tmp_path)
    no_crash(done)
    assert done.returncode == 2
    after = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file() and p.name != ".lock"}
    assert after == {name: data for name, data in before.items() if name != ".lock"}


def test_8_a_working_directory_that_is_a_file_is_refused_before_running(tmp_path: Path, write_campaign) -> None:
    (tmp_path / "afile").write_text("")
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n", application_extra="  cwd: afile\n")
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    no_crash(done)
    assert done.returncode == 2 and "afile is not a folder" in done.stderr
    assert not (tmp_path / "runs").exists()


def finished_run(tmp_path: Path, write_campaign) -> Path:
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 0
    return (tmp_path / "runs" / "camp" / "latest").resolve()


def test_9_report_output_never_replaces_links_devices_or_folders(tmp_path: Path, write_campaign) -> None:
    run_dir = finished_run(tmp_path, write_campaign)
    fifo, link, kept, folder = tmp_path / "fifo", tmp_path / "link.html", tmp_path / "kept.txt", tmp_path / "dir"
    os.mkfifo(fifo)
    kept.write_text("keep me")
    link.symlink_to(kept)
    folder.mkdir()
    cases = {
        str(fifo): 3,
        str(link): 3,
        str(folder): 2,
        str(tmp_path / "missing" / "r.html"): 2,
        str(tmp_path / ("x" * 300 + ".html")): 3,
    }
    for output, code in cases.items():
        done = run_cli("report", str(run_dir), "-o", output, cwd=tmp_path)
        no_crash(done)
        assert done.returncode == code, (output, done.stderr)
    assert fifo.is_fifo() and link.is_symlink() and kept.read_text() == "keep me" and folder.is_dir()
    assert run_cli("report", str(run_dir), "-o", str(tmp_path / "r.html"), cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("lock", ["symlink", "dangling", "directory", "fifo"])
def test_10_a_hostile_lock_file_is_refused_and_nothing_is_written_through_it(
    tmp_path: Path, write_campaign, lock: str
) -> None:
    run_dir = finished_run(tmp_path, write_campaign)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (run_dir / ".lock").unlink()
    if lock == "symlink":
        (run_dir / ".lock").symlink_to(victim)
    elif lock == "dangling":
        (run_dir / ".lock").symlink_to(tmp_path / "nowhere")
    elif lock == "directory":
        (run_dir / ".lock").mkdir()
    else:
        os.mkfifo(run_dir / ".lock")
    done = run_cli("run", "--resume", str(run_dir), cwd=tmp_path)
    no_crash(done)
    assert done.returncode == 3 and ".lock" in done.stderr
    assert victim.read_text() == "precious" and not (tmp_path / "nowhere").exists()


def test_10_links_inside_a_run_directory_are_refused_on_resume(tmp_path: Path, write_campaign) -> None:
    run_dir = finished_run(tmp_path, write_campaign)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (run_dir / "logs" / "a.log").unlink()
    (run_dir / "logs" / "a.log").symlink_to(victim)
    done = run_cli("run", "--resume", str(run_dir), "--rerun-failed", cwd=tmp_path)
    no_crash(done)
    assert done.returncode == 3 and "symbolic links" in done.stderr
    assert victim.read_text() == "precious"


def test_11_a_closed_pipe_a_full_output_and_a_deleted_directory(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("\n".join(f"- name: t{i}\n  kernel_name: k{i}" for i in range(300)))
    reader = subprocess.Popen(
        [sys.executable, "-m", "ncucampaign", "plan", str(campaign)],
        cwd=tmp_path,
        env=fake_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stdout.readline()  # `| head -1`
    reader.stdout.close()
    assert reader.wait(timeout=60) == 1
    assert b"Traceback" not in (reader.stderr.read() if reader.stderr else b"")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "ncucampaign", "plan", str(campaign)],
            cwd=tmp_path,
            env=fake_env(),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert done.returncode == 3 and "No space left on device" in done.stderr, done.stderr
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f"import os, sys; os.chdir({str(gone)!r}); os.rmdir({str(gone)!r}); from ncucampaign.cli import main; sys.exit(main(['plan', {str(campaign)!r}]))"
    done = subprocess.run([sys.executable, "-c", script], env=fake_env(), capture_output=True, text=True)
    assert done.returncode == 3 and "current directory no longer exists" in done.stderr, done.stderr


CRASHER = ROOT / "tests" / "fixtures" / "damaged" / "aborts_the_reader.ncu-rep"  # nvtx_rangefilter, bits flipped


def test_1_a_report_that_crashes_the_native_reader_crashes_nothing_of_ours(tmp_path: Path, write_campaign) -> None:
    """NVIDIA's reader aborts the process (SIGABRT, a protobuf check) on this bit-flipped report: it is
    read in a worker process, so summarize says so and a run classifies the attempt."""
    pytest.importorskip("ncu_report", reason="the ncu-report wheel (pip install ncucampaign[reports])")
    crashed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from ncucampaign.results.reading.reader import read_results as r; r(__import__('pathlib').Path(sys.argv[1]))",
            str(CRASHER),
        ],
        capture_output=True,
    )
    assert crashed.returncode == -signal.SIGABRT  # what would have happened in our own process
    done = run_cli("summarize", str(CRASHER), cwd=tmp_path)
    no_crash(done)
    assert done.returncode == 2 and "the report reader crashed on it" in done.stderr
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "name_exact.ncu-rep").write_bytes(CRASHER.read_bytes())  # the fake ncu copies this one
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=fake_env(FAKE_NCU_REPORTS=str(reports)))
    no_crash(done)
    assert done.returncode == 1
    _, manifest = load_manifest(tmp_path / "runs")
    assert target(manifest, "a")["status"] == "profiler_error" and "crashed" in target(manifest, "a")["message"]


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_hostile_22_10_readers_open_only_regular_files_and_ncu_never_writes_into_odd_ones(
    tmp_path: Path, write_campaign, kind: str
) -> None:
    run_dir = finished_run(tmp_path, write_campaign)
    report = run_dir / "reports" / f"a{REPORT}"
    report.unlink()
    os.mkfifo(report) if kind == "fifo" else report.mkdir()
    done = run_cli("findings", str(run_dir), cwd=tmp_path, timeout=60)  # a FIFO blocked it for 600 s
    no_crash(done)
    assert f"a{REPORT}: " + ("not a regular file" if kind == "fifo" else "a folder") in done.stdout + done.stderr
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["targets"][0].update(status="pending", report=None)  # as if killed before its report
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    rerun = run_cli("run", "--resume", str(run_dir), cwd=tmp_path, timeout=60)  # a FIFO stalled ncu's write
    no_crash(rerun)
    assert rerun.returncode == 3 and "refusing to" in rerun.stderr and "a.ncu-rep" in rerun.stderr, rerun.stderr
    assert report.is_fifo() if kind == "fifo" else report.is_dir()


def hanging_imports(tmp_path: Path, write_campaign) -> tuple[subprocess.Popen[str], Path, list[int]]:
    """A shared run whose first `ncu --import` hangs; returns the runner, the hang file and the
    pids of the imports hanging (an observable state, not a sleep)."""
    hang = tmp_path / "hang"
    hang.write_text("")
    runner = start(tmp_path, write_campaign(TRACE_TARGETS), fake_env(FAKE_NCU_IMPORT_HANG=str(hang)))
    pids_file = Path(f"{hang}.pids")
    deadline = time.monotonic() + 60
    while not (pids_file.is_file() and pids_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return runner, hang, [int(pid) for pid in pids_file.read_text().split()]


def test_hostile_22_4_ctrl_c_stops_hanging_imports(tmp_path: Path, write_campaign) -> None:
    runner, hang, _ = hanging_imports(tmp_path, write_campaign)
    try:
        os.kill(runner.pid, signal.SIGINT)  # one Ctrl-C; the import would run to its 300 s timeout
        out, err = runner.communicate(timeout=60)
    finally:
        runner.kill()
        hang.unlink()
    no_crash(subprocess.CompletedProcess([], runner.returncode, out, err))
    assert runner.returncode == 130, out + err
    started = [int(pid) for pid in Path(f"{hang}.pids").read_text().split()]  # those in flight with the first
    assert not any(alive(pid) for pid in started)


def test_hostile_22_5_resume_stops_the_imports_a_killed_runner_left(tmp_path: Path, write_campaign) -> None:
    runner, hang, pids = hanging_imports(tmp_path, write_campaign)
    runner.kill()  # kill -9: the imports (their own process groups) live on
    runner.communicate()
    try:
        assert all(alive(pid) for pid in pids)
        resumed = run_cli("run", "--resume", str(tmp_path / "runs" / "camp" / "latest"), cwd=tmp_path, timeout=120)
        assert not any(alive(pid) for pid in pids), "resume left the imports of the killed run running"
    finally:
        hang.unlink()
    assert resumed.returncode in (0, 1, 130)  # whatever the resumed run did with the hanging import


def test_hostile_22_11_escape_sequences_from_a_manifest_never_reach_the_terminal(
    tmp_path: Path, write_campaign
) -> None:
    run_dir = finished_run(tmp_path, write_campaign)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["targets"][0]["name"] = "a\x1b[41mX"
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    for command in ("summarize", "findings"):
        done = run_cli(command, str(run_dir), cwd=tmp_path)
        no_crash(done)
        assert "\x1b" not in done.stdout + done.stderr and "a\\x1b[41mX" in done.stdout, (command, done.stdout)


def test_hostile_22_11_resume_checks_the_shared_folders_and_drops_half_written_files(
    tmp_path: Path, write_campaign
) -> None:
    assert run_cli("run", str(write_campaign(TRACE_TARGETS)), "--out", "runs", cwd=tmp_path).returncode == 0
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()
    leftover = run_dir / ".manifest.json.abc123.tmp"  # a runner killed inside the atomic write
    leftover.write_text("{")
    shared_log = next((run_dir / "logs" / "shared").iterdir())
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    shared_log.unlink()
    shared_log.symlink_to(victim)
    refused = run_cli("run", "--resume", str(run_dir), "--rerun-failed", cwd=tmp_path)
    no_crash(refused)
    assert refused.returncode == 3 and "symbolic links" in refused.stderr and shared_log.name in refused.stderr
    shared_log.unlink()
    resumed = run_cli("run", "--resume", str(run_dir), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert victim.read_text() == "precious" and not leftover.exists()


def test_hostile_22_11_a_planted_trace_cache_link_is_not_followed(tmp_path: Path, write_campaign) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "runs" / ".cache").mkdir(parents=True)
    (tmp_path / "runs" / ".cache" / "traces").symlink_to(elsewhere)
    done = run_cli("run", str(write_campaign(TRACE_TARGETS)), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not list(elsewhere.iterdir())  # nothing written through the link


def test_hostile_22_11_a_split_of_an_excluding_target_equals_its_own_run(tmp_path: Path, write_campaign) -> None:
    # the fake ncu now applies --nvtx-exclude while profiling too, so the two can be compared
    targets = (
        "- name: outside_mlp\n  kernel_name: rmsnorm_kernel\n  nvtx_include: decode_step/\n  nvtx_exclude: 'mlp]'\n"
        "  matrix:\n    launch_skip: [0, 3]\n- name: rms\n  kernel_name: rmsnorm_kernel\n  launch_skip: 2\n"
    )
    from tests.execute.shared_campaigns import obtained, profiled_launch

    for folder, extra in (("shared", []), ("alone", ["--no-share"])):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "camp.yaml").write_text(write_campaign(targets).read_text())
        done = run_cli("run", "camp.yaml", "--out", "runs", *extra, cwd=tmp_path / folder)
        assert done.returncode == 0, done.stderr
    shared_dir, manifest = load_manifest(tmp_path / "shared" / "runs")
    alone_dir, _ = load_manifest(tmp_path / "alone" / "runs")
    assert set(obtained(manifest).values()) == {"shared"}
    for name in obtained(manifest):
        launch = profiled_launch(alone_dir, name)
        assert launch == profiled_launch(shared_dir, name), name
        assert name == "rms" or "mlp" not in launch[0], launch  # the excluded range is excluded


def test_hostile_22_9_a_manifest_far_beyond_what_runs_write_is_refused_with_its_size(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with open(run_dir / "manifest.json", "wb") as handle:  # sparse: 300 MiB that take no disk
        handle.truncate(300 * 2**20)
    for command in ("summarize", "findings", "report"):
        done = run_cli(command, str(run_dir), cwd=tmp_path, timeout=60)
        no_crash(done)
        said = "300 MiB, more than the 256 MiB its readers take (NCUCAMPAIGN_MAX_MANIFEST_MIB=300 reads it"
        assert done.returncode == 2 and said in done.stderr, (command, done.stderr)


def test_hostile_22_9_reading_a_large_run_triggers_no_more_garbage_collections_than_a_small_one(
    tmp_path: Path,
) -> None:
    """At 20,000 targets, the cyclic collections that building a run's records triggered took two thirds
    of summarize's and compare's time (tests/benchmarks/bench.py read prints the seconds). Counted here,
    not timed: a run of 2,000 targets triggers no more of them than one of 20 (the command's own
    start-up, its parser and imports, triggers a few either way)."""
    from tests.benchmarks.read_scale import large_run

    def collections(args: list[str], last: str) -> int:
        started: list[int] = []

        def count(phase: str, info: dict[str, int]) -> None:
            started.extend([info["generation"]] if phase == "start" else [])

        gc.callbacks.append(count)
        try:
            with contextlib.redirect_stdout(io.StringIO()) as out, signal_handlers_restored():
                code = main(args)
        finally:
            gc.callbacks.remove(count)
        assert code == 0, (args, code)
        assert args[0] == "compare" or last in out.getvalue(), args  # every target was read
        return len(started)

    (tmp_path / "small").mkdir()
    (tmp_path / "large").mkdir()
    small, large = large_run(tmp_path / "small", 20), large_run(tmp_path / "large", 2000)
    for command in (["summarize"], ["summarize", "--format", "csv"], ["compare"]):
        runs = [[str(run)] * (2 if command[0] == "compare" else 1) for run in (small, large)]
        few, many = (
            collections([command[0], *paths, *command[1:]], last)
            for paths, last in zip(runs, ("t19", "t1999"), strict=True)
        )
        assert many <= few + 2, (command, few, many)


def test_hostile_22_11_an_environment_error_mid_run_leaves_nothing_running_and_no_ctrl_c_message(
    tmp_path: Path,
) -> None:
    # the first target's application plants a link where the second target's report goes
    plant = f'ln -sf /nonexistent "$NCUCAMPAIGN_RUN_DIR/reports/b{REPORT}"'
    app = f"{plant}; exec {sys.executable} {ROOT / 'tests' / 'fake_ncu' / 'fake_app.py'}"
    targets = "".join(f"  - name: {n}\n    kernel_name: rmsnorm_kernel\n" for n in "abc")
    (tmp_path / "camp.yaml").write_text(
        f"application:\n  command: {json.dumps(app)}\n  shell: true\n"
        f"defaults:\n  launch_count: 1\n  share: 'off'\ntargets:\n{targets}"
    )
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path)
    no_crash(done)
    assert done.returncode == 3 and f"b{REPORT}" in done.stderr, done.stderr
    assert "Ctrl-C" not in done.stderr and "stopping:" not in done.stderr  # nobody pressed it
    _, manifest = load_manifest(tmp_path / "runs")
    assert manifest["state"] == "interrupted"
    assert "running" not in {t["status"] for t in manifest["targets"]}
    assert target(manifest, "a")["status"] == "ok"  # what was done is recorded


def test_40_a_kill_while_the_machine_is_asked_leaves_no_run_directory(tmp_path: Path, write_campaign) -> None:
    """What ncu, nvidia-smi and git say is asked before a fresh run's directory is made: a kill -9 while
    they answered left a folder with no manifest, which --resume could not finish."""
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    asked, smi = tmp_path / "asked", tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(f"#!/bin/sh\ntouch {asked}\nexec sleep 30\n")
    smi.chmod(0o755)
    env = fake_env()
    env["PATH"] = f"{smi.parent}{os.pathsep}{env['PATH']}"
    runner = subprocess.Popen(
        [sys.executable, "-m", "ncucampaign", "run", str(campaign), "--out", "runs"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not asked.exists() and runner.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert asked.exists(), "nvidia-smi was never asked"
    finally:
        runner.kill()
        runner.wait()
    made = [p for p in (tmp_path / "runs" / "camp").glob("*")] if (tmp_path / "runs" / "camp").exists() else []
    assert made == [], made
    resumed = run_cli("run", str(campaign), "--out", "runs", "--resume", cwd=tmp_path)
    assert resumed.returncode == 2 and "no run of camp under" in resumed.stderr and "began" in resumed.stderr


def test_the_application_gets_no_pydantic_setting_of_ours(tmp_path: Path) -> None:
    """ncucampaign turns pydantic's plugin scan off while its own models are built (start-up); the
    application, which may use pydantic's plugins, must not inherit that. A user's own setting stays."""
    campaign = tmp_path / "camp.yaml"
    seen = tmp_path / "seen"
    app = f"import os, pathlib; pathlib.Path({str(seen)!r}).write_text(os.environ.get('PYDANTIC_DISABLE_PLUGINS', '<unset>'))"
    campaign.write_text(
        f"application: {{command: [{json.dumps(sys.executable)}, -c, {json.dumps(app)}]}}\n"
        "targets: [{name: a, kernel_name: k}]\n"
    )
    for given, expected in ((None, "<unset>"), ("logfire", "logfire")):
        env = fake_env()
        env.pop("PYDANTIC_DISABLE_PLUGINS", None)
        if given is not None:
            env["PYDANTIC_DISABLE_PLUGINS"] = given
        done = subprocess.run(
            [sys.executable, "-m", "ncucampaign", "run", str(campaign), "--out", "runs"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert seen.read_text() == expected, done.stdout + done.stderr
