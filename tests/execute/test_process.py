"""The process layer on its own: group kill, leftovers, escalation, live output."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest

from ncucampaign.execute.process import log_tail
from ncucampaign.execute.process.groups import run_in_group
from ncucampaign.execute.process.log_tail import LogTail
from ncucampaign.execute.process.short import run_captured
from ncucampaign.execute.process.signals import StopRequest
from tests.conftest import alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups via /proc")


def test_leftover_processes_of_the_group_are_killed(tmp_path: Path) -> None:
    """The command exits at once but leaves a background child behind (like an orphaned app)."""
    pid_file = tmp_path / "pid"
    script = f"sleep 300 & echo $! > {pid_file}; exit 0"
    outcome = run_in_group(
        ["/bin/sh", "-c", script],
        log_path=tmp_path / "log",
        cwd=tmp_path,
        env_additions={},
        timeout=10,
        stop=StopRequest(),
    )
    assert outcome.exit_code == 0 and not outcome.timed_out
    assert outcome.leftovers_killed == 1
    assert not alive(int(pid_file.read_text()))


@pytest.mark.slow
def test_timeout_escalates_to_sigkill(tmp_path: Path) -> None:
    script = "trap '' INT TERM; echo started; while :; do sleep 0.1; done"
    outcome = run_in_group(
        ["/bin/sh", "-c", script],
        log_path=tmp_path / "log",
        cwd=tmp_path,
        env_additions={"X": "1"},
        timeout=0.5,
        stop=StopRequest(),
        grace=0.3,
    )
    assert outcome.timed_out
    assert outcome.signals_sent == ("SIGINT", "SIGTERM", "SIGKILL")
    assert outcome.exit_code == -9
    assert "started" in (tmp_path / "log").read_text()


def test_a_second_stop_request_kills_at_once(tmp_path: Path) -> None:
    stop = StopRequest()
    stop.request()
    stop.request()
    outcome = run_in_group(
        ["/bin/sh", "-c", "trap '' INT TERM; sleep 30"],
        log_path=tmp_path / "log",
        cwd=tmp_path,
        env_additions={},
        timeout=None,
        stop=stop,
    )
    assert outcome.interrupted and outcome.signals_sent == ("SIGKILL",)


def test_environment_and_live_output(tmp_path: Path) -> None:
    seen: list[str] = []
    outcome = run_in_group(
        ["/bin/sh", "-c", "echo value=$NCUC_TEST"],
        log_path=tmp_path / "log",
        cwd=tmp_path,
        env_additions={"NCUC_TEST": "42"},
        timeout=10,
        stop=StopRequest(),
        echo=seen.append,
    )
    assert outcome.exit_code == 0
    assert "value=42" in "".join(seen)


def test_a_short_command_is_never_started_once_the_run_is_stopping(tmp_path: Path) -> None:
    stop = StopRequest()
    stop.request(1)
    code, output = run_captured(["sh", "-c", f"touch {tmp_path / 'ran'}"], 30, stop)
    assert code is None and "not started" in output and not (tmp_path / "ran").exists()


def test_a_stop_request_ends_a_running_short_command_and_its_group(tmp_path: Path) -> None:
    stop, started = StopRequest(), tmp_path / "started"
    script = f"sleep 300 & echo $! > {tmp_path / 'child'}; touch {started}; wait"
    result: list[tuple[int | None, str]] = []
    worker = threading.Thread(target=lambda: result.append(run_captured(["sh", "-c", script], 600, stop)))
    worker.start()
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:  # the observable state: it runs
        time.sleep(0.02)
    stop.request(1)
    worker.join(60)
    assert not worker.is_alive() and result[0][0] is None and "the run is stopping" in result[0][1]
    child = int((tmp_path / "child").read_text())
    deadline = time.monotonic() + 10
    while alive(child):  # SIGKILL to the group: gone as soon as the kernel reaps it
        assert time.monotonic() < deadline, "the command's child outlived the stop"
        time.sleep(0.02)


def test_the_live_view_keeps_what_was_written_between_its_last_empty_read_and_the_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race CI met at load: the tail read nothing, the process then wrote and ended, and stop() came before the
    tail asked whether it was done; it must read once more."""
    log = tmp_path / "log"
    log.write_bytes(b"")
    seen: list[str] = []
    holder: list[LogTail] = []
    raced = threading.Event()
    real_open = open

    class Racing:
        def __init__(self, handle: IO[bytes]) -> None:
            self._handle, self._raced = handle, False

        def __enter__(self) -> Racing:
            return self

        def __exit__(self, *exc: object) -> None:
            self._handle.close()

        def seek(self, offset: int) -> None:
            self._handle.seek(offset)

        def read(self, size: int) -> bytes:
            chunk = self._handle.read(size)
            if not chunk and not self._raced:
                self._raced = True
                with real_open(log, "ab") as writer:
                    writer.write(b"value=42\n")
                while not holder:
                    time.sleep(0.001)
                holder[0]._done.set()  # what stop() does first, as the process ends
                raced.set()
            return chunk

    monkeypatch.setattr(log_tail, "open", lambda path, mode: Racing(real_open(path, "rb")), raising=False)
    tail = LogTail(log, 0, seen.append)
    holder.append(tail)
    assert raced.wait(timeout=60)
    tail.stop()
    assert "".join(seen) == "value=42\n"
