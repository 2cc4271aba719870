"""Long-lived worker processes (execute/process/workers.py): kept after an answer, never after a
crash, a hang or a flood; replaced when one ended of its own accord."""

from __future__ import annotations

import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ncucampaign.execute.process.workers import WorkerPool
from ncucampaign.results.reading import isolated
from tests.conftest import FIXTURES, ROOT, fake_env, gone, run_cli_here

# A worker that answers each line with its pid, and misbehaves on request.
WORKER = """
import os, sys, time
for line in sys.stdin:
    word = line.strip()
    if word == "crash":
        os.kill(os.getpid(), 9)
    if word == "hang":
        time.sleep(60)
    if word == "flood":
        sys.stdout.write("x" * 100000)
        sys.stdout.flush()
        time.sleep(60)
    sys.stdout.write(f"{os.getpid()} {word}\\n")
    sys.stdout.flush()
    if word == "last":
        break
"""


def pool() -> WorkerPool:
    return WorkerPool(["-c", WORKER], {})


def pid_of(line: str | None) -> int:
    assert line is not None
    return int(line.split()[0])


def test_a_worker_that_answered_serves_the_next_request() -> None:
    workers = pool()
    try:
        first, second = workers.ask("a", 30, 1000), workers.ask("b", 30, 1000)
        assert first.fresh and not second.fresh
        assert pid_of(first.line) == pid_of(second.line) and second.line is not None and second.line.endswith(" b")
    finally:
        workers.close()


def test_a_worker_that_crashed_is_not_used_again() -> None:
    workers = pool()
    try:
        first = workers.ask("a", 30, 1000)
        crashed = workers.ask("crash", 30, 1000)
        assert crashed.line is None and crashed.code == -signal.SIGKILL and not crashed.fresh
        after = workers.ask("b", 30, 1000)
        assert after.fresh and pid_of(after.line) != pid_of(first.line)
    finally:
        workers.close()


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_a_worker_that_hangs_or_floods_is_killed_and_answers_nothing() -> None:
    workers = pool()
    try:
        pid = pid_of(workers.ask("a", 30, 1000).line)
        hung = workers.ask("hang", 0.5, 1000)
        assert hung.line is None and hung.code is None
        assert gone(pid)
        flooded = workers.ask("flood", 30, 1000)
        assert flooded.line is None and flooded.code is None
    finally:
        workers.close()


def test_a_worker_that_ended_after_its_answer_is_replaced() -> None:
    workers = pool()
    try:
        last = workers.ask("last", 30, 1000)
        again = workers.ask("b", 30, 1000)
        assert again.line is not None and pid_of(again.line) != pid_of(last.line) and again.fresh
    finally:
        workers.close()


def test_requests_beyond_the_pools_workers_wait_for_one_and_reuse_it() -> None:
    """Eight threads asking at once share two workers: no more start (loading the reader
    in a worker per split cost more than the reads)."""
    workers = WorkerPool(["-c", WORKER], {}, most=2)
    try:
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda word: workers.ask(word, 30, 1000), [f"w{i}" for i in range(8)]))
        assert all(a.line is not None for a in answers)
        assert len({pid_of(a.line) for a in answers}) <= 2
    finally:
        workers.close()


def test_warm_up_loads_the_reader_in_a_worker_that_the_first_read_then_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run warms the reader while its first ncu process runs: the read that follows
    finds a worker that has NVIDIA's reader loaded instead of starting one."""
    pytest.importorskip("ncu_report")
    workers = WorkerPool(["-m", "ncucampaign.results.reading.reader_worker"], {"PYTHONPATH": str(ROOT)})
    monkeypatch.setattr(isolated, "_POOL", [workers])
    try:
        isolated.warm_up(None)
        with workers._changed:  # the warm-ups answered: their workers are idle in the pool
            assert workers._changed.wait_for(lambda: len(workers._idle) == workers.most, timeout=120)
        warmed = sorted(worker.proc.pid for worker in workers._all)
        results = isolated.result_rows(FIXTURES / "reports" / "count3.ncu-rep")
        after = {worker.proc.pid: worker.proc.poll() for worker in workers._all}  # what ended, if one did
        assert results and sorted(after) == warmed, f"warmed {warmed}, after the read {after}"
        assert len(warmed) == workers.most
    finally:
        workers.close()


def test_places_reserved_for_new_workers_are_waited_for_and_given_back() -> None:
    workers = pool()
    try:
        assert workers.reserve() == workers.most and workers.reserve() == 0
        workers.release()  # one place given back unused: a request starts a worker in it
        first = workers.ask("a", 30, 1000)
        assert first.fresh and len(workers._all) == 1 and workers.reserve() == 0
        with ThreadPoolExecutor(1) as asker:  # the first worker busy elsewhere: this request waits
            workers._idle.clear()
            asked = asker.submit(workers.ask, "b", 30, 1000)
            started = workers.start_reserved("warm", 30, 1000)
            answer = asked.result()
        assert started.fresh and started.line is not None and started.line.endswith(" warm")
        assert answer.line is not None and pid_of(answer.line) == pid_of(started.line)
    finally:
        workers.close()


@pytest.mark.slow  # a run whose one profiled kernel takes 4 s
def test_a_run_that_lasts_gets_both_readers_ready_while_ncu_profiles(
    tmp_path: Path, write_campaign, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One report is read, yet both reader workers started: the warm-up's, begun a second into the
    run while its ncu process profiled. A run over within the second warms nothing."""
    pytest.importorskip("ncu_report")
    workers = WorkerPool(["-m", "ncucampaign.results.reading.reader_worker"], {"PYTHONPATH": str(ROOT)})
    monkeypatch.setattr(isolated, "_POOL", [workers])
    campaign = write_campaign("- name: a\n  kernel_name: rmsnorm_kernel\n")
    try:
        env = fake_env(FAKE_NCU_SECONDS_PER_KERNEL="4")
        done = run_cli_here("run", str(campaign), "--out", "runs", cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(workers._all) == workers.most
    finally:
        workers.close()
