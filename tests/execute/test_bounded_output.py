"""Every output ncucampaign reads from another program is bounded and decoded leniently, and every
probe stops its process group: ncu --version, nvidia-smi, git, ncu --import, the reader
worker, and the application's log read back to judge an attempt."""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ncucampaign.execute.attempt.classify import parse_console
from ncucampaign.execute.process import short
from ncucampaign.execute.process.short import answered, probed, probing_pool, run_captured
from ncucampaign.execute.rundir import log_text
from tests.conftest import gone


def script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "tool"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return [str(path)]


def test_bytes_that_are_not_utf8_are_replaced_not_raised(tmp_path: Path) -> None:
    done = probed(script(tmp_path, r"printf 'Version 2025.3.1.0 \351\n'"))
    assert done.ok and done.text == "Version 2025.3.1.0 \ufffd\n"
    code, out = run_captured(script(tmp_path, r"printf '\377\376 listed\n'"), 30)
    assert code == 0 and out.endswith(" listed\n")


def test_output_past_the_limit_is_cut_and_said(tmp_path: Path) -> None:
    done = probed(script(tmp_path, "exec yes 0123456789"), limit=1 << 20)
    assert done.code is None and done.why == "tool printed more than 1 MiB" and len(done.data) <= 1 << 20
    code, out = run_captured(script(tmp_path, "exec yes 0123456789"), 30, limit=1 << 20)
    assert code is None and out.endswith("(tool printed more than 1 MiB)")


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_a_child_that_holds_the_output_open_is_stopped_and_what_was_printed_kept(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    done = probed(script(tmp_path, f"sleep 300 & echo $! > {pid_file}\necho 'Version 2025.3.1.0'"), timeout=60)
    assert done.ok and done.text == "Version 2025.3.1.0\n", done
    assert gone(int(pid_file.read_text()))


def test_a_probe_that_answers_nothing_is_named_and_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    done = probed(script(tmp_path, f"echo $$ > {pid_file}\nexec sleep 300"), timeout=0.3)
    assert done.code is None and done.why == "tool did not answer in 0.3 s"
    assert gone(int(pid_file.read_text()))
    missing = probed([str(tmp_path / "nowhere")])
    assert missing.code is None and missing.why is not None and missing.why.startswith("nowhere could not start")


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """Python's own SIGINT handler for the test, as the command installs it (_entry.py): a suite started
    as a background job of a script (`.ci/run &`, two clones at once) inherits SIGINT ignored, and
    Python then raises no KeyboardInterrupt (both tests below failed in both clones, 30 s each)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.usefixtures("sigint_raises")
@pytest.mark.parametrize("delivered_to", ["the main thread", "another thread"])
def test_a_ctrl_c_while_probes_run_in_threads_stops_them_at_once(tmp_path: Path, delivered_to: str) -> None:
    """The pool of installed_ncu's four questions used to wait for every probe after a Ctrl-C (20 s
    after it the command still ran). The kernel may hand a process's signal to any of its threads: one
    that lands beside the main thread's wait must stop the probes too (CI, 2026-12-03: once in six
    runs of the suite, the wait lasted the probes' 30 s)."""
    started, finished = tmp_path / "started", tmp_path / "finished"
    argv = script(tmp_path, f"echo $$ >> {started}\nsleep 30\ntouch {finished}")

    def interrupt_once_both_started() -> None:
        while not started.exists() or len(started.read_text().split()) < 2:
            time.sleep(0.01)
        if delivered_to == "the main thread":
            os.kill(os.getpid(), signal.SIGINT)  # a real signal: Linux hands it to the main thread first
        else:
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # as when the kernel picks this thread

    threading.Thread(target=interrupt_once_both_started, daemon=True).start()
    with pytest.raises(KeyboardInterrupt), probing_pool(2) as pool:
        answers = [pool.submit(probed, argv, 60) for _ in range(2)]
        [answered(answer) for answer in answers]
    assert not finished.exists()
    assert all(gone(int(pid)) for pid in started.read_text().split())
    assert probed(script(tmp_path, "echo again")).ok  # later probes start as before


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_a_huge_log_is_read_back_as_ncu_lines_and_its_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_text, "LOG_TEXT_BYTES", 1 << 16)
    noise = b"".join(b"the application says %d\n" % i for i in range(50_000))
    one_line = b"x" * (1 << 20) + b"\n"  # a line far longer than LINE_BYTES
    profiled = b"".join(b'==PROF== Profiling "k%d": 0%%....100%% - 1 pass\n' % i for i in range(30))
    text = b"==PROF== Connected to process 7 (/usr/bin/python3)\n" + profiled + noise + one_line
    text += b"==WARNING== No kernels were profiled.\nAvailable Kernels:\n1. rmsnorm_kernel\n2. nvjet\n"
    text += noise[-2000:] + b"Traceback: the error\n==ERROR== The application returned an error code (1).\n"
    read = log_text.log_text(io.BytesIO(text), 0)
    assert len(read) < 200_000
    whole, bounded = parse_console(text.decode()), parse_console(read)
    assert bounded == whole  # everything judging reads is the same
    assert bounded.profiled == 30 and bounded.available_kernels == ("rmsnorm_kernel", "nvjet")


def test_probe_timeouts_are_read_when_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(short, "PROBE_TIMEOUT_S", 0.2)
    assert probed(script(tmp_path, "exec sleep 300")).why == "tool did not answer in 0.2 s"
