"""A run's own seconds by phase: the clock's accounting on a fake clock, and a run's
manifest against the fake ncu."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from ncucampaign import own_time
from ncucampaign.cli import COMMANDS, commands_for
from ncucampaign.own_time import PHASES, OwnClock
from tests.conftest import campaign_text, fake_env, load_manifest, run_cli


class FakeTime:
    """perf_counter that moves only when told: the accounting, not the machine, is under test."""

    def __init__(self) -> None:
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> tuple[OwnClock, FakeTime]:
    fake = FakeTime()
    monkeypatch.setattr(own_time, "time", fake)
    return OwnClock(), fake


def test_an_inner_phase_and_a_wait_are_not_counted_for_the_outer_phase(clock: tuple[OwnClock, FakeTime]) -> None:
    own, t = clock
    with own.phase("planning"):
        t.now += 1.0
        with own.phase("records"):
            t.now += 0.25
            with own.waiting():  # a child process inside the manifest write (none really; the rule)
                t.now += 5.0
        with own.waiting():  # ncu profiling
            t.now += 30.0
        t.now += 0.5
    assert own.totals() == {"planning": 1.5, "records": 0.25}


def test_a_phase_inside_a_wait_counts_for_itself(clock: tuple[OwnClock, FakeTime]) -> None:
    """The run waits on its units (waiting), and each unit counts its own phases in the same thread."""
    own, t = clock
    with own.phase("planning"), own.waiting():
        with own.phase("other"):
            t.now += 2.0
            with own.waiting():
                t.now += 60.0
        t.now += 7.0  # waiting on a lane's thread
    assert own.totals() == {"planning": 0.0, "other": 2.0}


def test_open_phases_count_up_to_now_for_the_thread_that_asks(clock: tuple[OwnClock, FakeTime]) -> None:
    own, t = clock
    own.add("start-up", 0.4)
    with own.phase("planning"):
        t.now += 1.0
        with own.phase("other"):
            t.now += 3.0
            with own.waiting():
                t.now += 10.0
            t.now += 1.0
            totals = own.totals()
    assert totals == {"start-up": 0.4, "planning": 1.0, "other": 4.0}
    assert list(totals) == [p for p in PHASES if p in totals]  # in the phases' order


def _in_thread(own: OwnClock, name: str, while_inside: Callable[[], None]) -> None:
    """Run `while_inside` while another thread is inside phase `name`."""
    entered, leave = threading.Event(), threading.Event()

    def work() -> None:
        with own.phase(name):
            entered.set()
            leave.wait()

    worker = threading.Thread(target=work)
    worker.start()
    entered.wait()
    while_inside()
    leave.set()
    worker.join()


def test_a_moment_two_threads_work_in_counts_once_shared_between_their_phases(clock: tuple[OwnClock, FakeTime]) -> None:
    """The phases add up to the wall seconds in which any thread worked (summing threads overstated it)."""
    own, t = clock

    def two_seconds() -> None:
        t.now += 2.0

    with own.phase("other"):
        _in_thread(own, "splits", two_seconds)
        t.now += 1.0  # the worker has left: this thread alone
    assert own.totals() == {"splits": 1.0, "other": 2.0}
    assert sum(own.totals().values()) == 3.0


def test_a_thread_working_while_the_others_wait_counts_in_full(clock: tuple[OwnClock, FakeTime]) -> None:
    own, t = clock

    def three_seconds() -> None:
        t.now += 3.0

    with own.phase("other"), own.waiting():  # the run's thread waits on ncu profiling the next union
        _in_thread(own, "splits", three_seconds)
    assert own.totals() == {"other": 0.0, "splits": 3.0}


def test_since_process_start_is_known_on_linux() -> None:
    started = own_time.since_process_start()
    assert started is None or started >= 0.0
    if Path("/proc/self/stat").exists():
        assert started is not None


@pytest.mark.slow
def test_a_shared_run_records_its_own_seconds_by_phase_without_ncus_time(tmp_path: Path, write_campaign) -> None:
    """The splits and listings of a shared run with a trace; ncu takes 0.05 s a profiled kernel (the
    trace profiles dozens), which the phases leave out."""
    campaign = write_campaign(
        """
- name: rms
  kernel_name: rmsnorm_kernel
  matrix:
    launch_skip: [0, 5]
- name: gemm
  kernel_name: regex:nvjet
"""
    )
    env = fake_env(FAKE_NCU_SECONDS_PER_KERNEL="0.05")
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    own = manifest["own_seconds"]
    assert set(own) >= {"start-up", "planning", "trace listing", "splits", "verification", "records", "other"}
    assert all(seconds >= 0 for seconds in own.values())
    assert all(t["obtained"]["how"] == "shared" for t in manifest["targets"])
    union = next(r for r in manifest["shared_runs"] if r["name"] == "shared/1")
    ncu_seconds = sum(a["seconds"] for r in manifest["shared_runs"] for a in r["attempts"])
    assert union["attempts"] and ncu_seconds > 1.0  # the trace's launches at 0.05 s each, at least
    assert own["other"] < ncu_seconds  # the attempts' waits on ncu are not the run's own


@pytest.mark.slow  # two Python start-ups
def test_start_up_imports_only_the_command_that_runs() -> None:
    """validate imports no run machinery; run imports no report page (lazy imports)."""
    code = (
        "import sys; from ncucampaign import cli; cli.load_commands(sys.argv[1:]); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('ncucampaign.'))))"
    )
    loaded = {}
    for command in ("validate", "run"):
        done = subprocess.run(
            [sys.executable, "-c", code, command, "x.yaml"], capture_output=True, text=True, check=True
        )
        loaded[command] = set(done.stdout.split())
    assert "ncucampaign.commands.validate" in loaded["validate"]
    assert not {"ncucampaign.commands.run", "ncucampaign.backends.local"} & loaded["validate"]
    assert "ncucampaign.backends.local" in loaded["run"] and "ncucampaign.commands.report" not in loaded["run"]
    assert commands_for(["--help"]) == COMMANDS and commands_for(["bogus"]) == COMMANDS
    assert commands_for(["--version"]) == ()  # before the fix, every command: 0.65 s to print the version
    assert commands_for(["plan", "--only", "run"]) == ("plan",)


def test_work_beside_ncu_profiling_is_not_the_runs_own(clock: tuple[OwnClock, FakeTime]) -> None:
    """While ncu profiles, the GPU sets the pace: a split in another thread delays nothing."""
    own, t = clock

    def profile_then_wait() -> None:
        with own.profiling():  # this thread runs the next union
            t.now += 5.0
        t.now += 0.5  # the union is done, the split still works: now it delays the run

    with own.phase("other"), own.waiting():
        _in_thread(own, "splits", profile_then_wait)
    assert own.totals() == {"other": 0.0, "splits": 0.5}


@pytest.mark.slow  # waits out a back-off of 2 s
def test_the_wait_before_a_retry_is_not_the_runs_own_time(tmp_path: Path) -> None:
    """Before the fix: a target whose application failed twice, 10 s apart, made 'own time: 10.3 s of this run's 11.0 s
    (93%) were ncucampaign's: other 9.9 s'."""
    app = tmp_path / "app.sh"
    app.write_text("#!/bin/sh\necho 'error: MODEL_DIR is not set' >&2\nexit 1\n")
    app.chmod(0o755)
    campaign = tmp_path / "camp.yaml"
    text = campaign_text("- name: t\n  kernel_name: rmsnorm_kernel\n  retries: 1\n  retry_delay: 2\n")
    campaign.write_text(text.replace(text.splitlines()[1], f"  command: [{json.dumps(str(app))}]"))
    done = run_cli("run", str(campaign), "--out", "runs", "--no-share", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    (target,) = manifest["targets"]
    assert len(target["attempts"]) == 2 and "retrying in 2s" in done.stdout
    assert manifest["own_seconds"].get("other", 0.0) < 1.0, manifest["own_seconds"]  # where the 2 s wait went
