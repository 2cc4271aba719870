"""Long-lived workers of this Python that answer one request a line (the report reader). A worker per request
cost 0.4-0.7 s a report, mostly loading NVIDIA's reader, so one that answered is kept; one that crashed, timed
out or printed past the limit is killed. Each has its own session and ends when its stdin closes."""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ncucampaign.own_time import CLOCK


@dataclass(frozen=True)
class Answer:
    """A worker's reply line; or `code`: the signal (negative) or exit code it died with, or None
    when it did not answer in time or printed past the limit."""

    line: str | None
    code: int | None = 0
    fresh: bool = True  # the worker had answered nothing before


class _Worker:
    def __init__(self, argv: Sequence[str], env: Mapping[str, str]) -> None:
        self.proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=dict(env), start_new_session=True,
        )  # fmt: skip
        self.pending = b""
        self.served = 0

    def ask(self, line: str, timeout: float, limit: int) -> Answer:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        fresh = self.served == 0
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:  # it died before the request: what it died of
            return Answer(None, self.proc.wait(), fresh)
        fd, deadline = self.proc.stdout.fileno(), time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or len(self.pending) > limit:
                return Answer(None, None, fresh)
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return Answer(None, self.proc.wait(), fresh)
                self.pending += chunk
        reply, _, self.pending = self.pending.partition(b"\n")
        self.served += 1
        return Answer(reply.decode(errors="replace"), 0, fresh)

    def end(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        self.proc.wait()


class WorkerPool:
    """At most `most` workers running `argv`, idle between requests; a request finding all busy waits (loading
    NVIDIA's reader costs more than most reads: 11 workers started for 11 splits took 1.6 s of own time)."""

    def __init__(self, argv: Sequence[str], env_additions: Mapping[str, str], most: int = 2) -> None:
        self.argv, self.env_additions, self.most = list(argv), dict(env_additions), max(1, most)
        self._changed = threading.Condition()
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._starting = 0

    def ask(self, line: str, timeout: float, limit: int) -> Answer:
        """One request; a worker that does not answer it well is killed. A worker that had ended of
        its own accord (exit 0, before this request reached it) is replaced, once."""
        answer = self._ask(line, timeout, limit)
        return self._ask(line, timeout, limit) if answer.line is None and answer.code == 0 else answer

    def _ask(self, line: str, timeout: float, limit: int) -> Answer:
        return self._answer(self._take(), line, timeout, limit)

    def _answer(self, worker: _Worker, line: str, timeout: float, limit: int) -> Answer:
        answer = Answer(None, None)
        try:
            answer = worker.ask(line, timeout, limit)
        finally:
            if answer.line is not None:
                with self._changed:
                    self._idle.append(worker)
                    self._changed.notify()
            else:
                self._drop(worker)
        return answer

    def reserve(self) -> int:
        """Take every free place for a new worker, for `start_reserved`; how many there were."""
        with self._changed:
            free = max(0, self.most - len(self._all) - self._starting)
            self._starting += free
            return free

    def release(self) -> None:
        """Give back a place `reserve` took, unused."""
        with self._changed:
            self._starting -= 1
            self._changed.notify()

    def start_reserved(self, line: str, timeout: float, limit: int) -> Answer:
        """Start a worker in a place `reserve` took and ask it `line` first (to get it ready before
        requests come); kept idle for them once it answered."""
        return self._answer(self._started(), line, timeout, limit)

    def _take(self) -> _Worker:
        with CLOCK.waiting(), self._changed:  # waiting for a busy worker is not this thread's own time
            while True:
                while self._idle:
                    idle = self._idle.pop()
                    if idle.proc.poll() is None:
                        return idle
                    self._all.discard(idle)  # it ended after its last answer
                    idle.end()
                if len(self._all) + self._starting < self.most:
                    self._starting += 1  # its place is taken before it starts, outside the lock
                    break
                self._changed.wait()
        return self._started()

    def _started(self) -> _Worker:
        """A new worker in a place taken (`_starting`) before."""
        worker = None
        try:
            worker = _Worker([sys.executable, *self.argv], {**os.environ, **self.env_additions})
            return worker
        finally:
            with self._changed:
                self._starting -= 1
                if worker is not None:
                    self._all.add(worker)
                self._changed.notify()

    def _drop(self, worker: _Worker) -> None:
        worker.end()
        with self._changed:
            self._all.discard(worker)
            self._changed.notify()

    def close(self) -> None:
        with self._changed:
            workers, self._all, self._idle = list(self._all), set(), []
        for worker in workers:
            worker.end()


def worker_pool(argv: Sequence[str], env_additions: Mapping[str, str]) -> WorkerPool:
    """A pool that ends its workers when this process exits."""
    pool = WorkerPool(argv, env_additions)
    atexit.register(pool.close)
    return pool
