"""Short commands whose output is wanted whole (ncu --import, --version, git, sbatch): captured, bounded by a
timeout, ended with the run's stop request, each in its own session so that stopping it stops all it started."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.own_time import CLOCK

STOP_POLL_S = 0.25  # how often a short command (ncu --import) looks whether the run is stopping
CAPTURE_LIMIT_BYTES = 1 << 30  # ncu --import of a long trace lists megabytes; a gigabyte is no listing


PROBE_TIMEOUT_S = 15.0  # asking ncu all four questions at once costs about 2 s (provenance.installed_ncu)
PROBE_LIMIT_BYTES = 16 << 20  # ncu --help is about 40 KB, nvidia-smi a line per GPU: far more is not an answer
EXITED_GRACE_S = 0.5  # what a probe left holding its output may still be flushing what it printed
T = TypeVar("T")


@dataclass(frozen=True)
class Probed:
    """What a short informational command did: its exit code (None when it could not start, did not
    answer, or printed past the limit: `why` says which), and what it printed on stdout."""

    code: int | None
    data: bytes
    why: str | None = None

    @property
    def ok(self) -> bool:
        return self.code == 0 and self.why is None

    @property
    def text(self) -> str:
        """Decoded leniently: a byte that is not UTF-8 (`Version 2025.3.1.0 \\351`) is no crash."""
        return self.data.decode(errors="replace")


class _LiveProbes:
    """The probes running now, in any thread: a Ctrl-C in the main thread stops them all, so that no
    thread waits on a probe that takes its time (20 s after Ctrl-C, the pool still waited)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._cancelled = False

    def started(self, group: int) -> bool:
        with self._lock:
            if not self._cancelled:
                self._groups.add(group)
            return not self._cancelled

    def ended(self, group: int) -> None:
        with self._lock:
            self._groups.discard(group)

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            for group in self._groups:
                _kill_group(group)

    def resume(self) -> None:
        with self._lock:
            self._cancelled = False


_LIVE = _LiveProbes()


def probed(
    argv: Sequence[str],
    timeout: float | None = None,
    cwd: Path | None = None,
    limit: int = PROBE_LIMIT_BYTES,
    env: Mapping[str, str] | None = None,
) -> Probed:
    """Run a short informational command (ncu --version, nvidia-smi, git) in a session of its own: at most `limit` bytes
    of its stdout are kept, and whatever it leaves behind (a child holding its output, a hang) is killed with its
    process group when it exits, answers nothing in `timeout` seconds, prints past the limit, or a Ctrl-C comes.
    `env`: its whole environment (None: this process's)."""
    return _bounded(argv, PROBE_TIMEOUT_S if timeout is None else timeout, limit, cwd=cwd, env=env, live=_LIVE)


def _bounded(
    argv: Sequence[str],
    timeout: float,
    limit: int,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    merged: bool = False,
    stop: StopRequest | None = None,
    live: _LiveProbes | None = None,
) -> Probed:
    """The one way a short command runs: in a session of its own, its stdout (and with `merged` its stderr) read
    bounded, and its whole group killed when it is done, however it ends. Its time is not the run's own (own_time)."""
    name = Path(argv[0]).name if argv else "?"
    try:
        proc = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merged else subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, cwd=cwd, env=env, start_new_session=True,
        )  # fmt: skip
    except (OSError, ValueError) as exc:
        return Probed(None, b"", f"{name} could not start: {getattr(exc, 'strerror', None) or exc}")
    assert proc.stdout is not None
    try:
        if live is not None and not live.started(proc.pid):
            return Probed(None, b"", f"{name} was stopped: the command is stopping")
        with CLOCK.waiting():
            data, why = _read_bounded(proc, name, timeout, limit, stop)
    finally:
        _kill_group(proc.pid)  # the leader is not reaped yet: its group id is still its own
        proc.stdout.close()
        proc.wait()
        if live is not None:
            live.ended(proc.pid)
    return Probed(proc.returncode if why is None else None, data, why)


def _read_bounded(
    proc: subprocess.Popen[bytes], name: str, timeout: float, limit: int, stop: StopRequest | None = None
) -> tuple[bytes, str | None]:
    """What `proc` prints until it exits (and its output ends, or stays open EXITED_GRACE_S longer),
    at most `limit` bytes; with why it was cut short: the timeout, the limit, the run stopping."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size, exited_at, at_end = 0, None, False
    while True:
        now = time.monotonic()
        if stop is not None and stop.level:
            return b"".join(chunks), "stopped: the run is stopping"
        if now >= deadline:
            return b"".join(chunks), f"{name} did not answer in {timeout:g} s"
        if proc.poll() is not None:
            exited_at = exited_at or now
            if at_end or now - exited_at > EXITED_GRACE_S:  # what it left holding its output says no more
                return b"".join(chunks), None
        if at_end:
            time.sleep(min(deadline - now, 0.02))  # its output is closed; it has not exited yet
            continue
        ready, _, _ = select.select([fd], [], [], min(deadline - now, STOP_POLL_S))
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        at_end = not chunk
        size += len(chunk)
        if size > limit:
            return b"".join(chunks), f"{name} printed more than {limit >> 20} MiB"
        chunks.append(chunk)


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def probe(
    argv: Sequence[str], timeout: float | None = None, cwd: Path | None = None, limit: int = PROBE_LIMIT_BYTES
) -> str | None:
    """Run a short informational command; its stdout, or None when it is missing or fails."""
    done = probed(argv, timeout, cwd, limit)
    return done.text if done.ok else None


@contextlib.contextmanager
def probing_pool(workers: int) -> Iterator[ThreadPoolExecutor]:
    """Threads for probes asked at once; wait for their answers inside the block (`answered`). A Ctrl-C (or any
    failure) while they run stops every probe they started, so that the command ends at once."""
    pool = ThreadPoolExecutor(workers)
    try:
        with CLOCK.waiting():  # on the probes: not the run's own time (own_time)
            yield pool
    except BaseException:
        _LIVE.cancel()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _LIVE.resume()


def answered(future: Future[T]) -> T:
    """The answer of what was asked in a probing_pool, waited for in slices of STOP_POLL_S: the kernel may hand a Ctrl-C
    to any thread, and one handed to a probe's thread wakes no untimed wait of the main thread, which then lasted as
    long as the probes (CI, 2026-12-03); between slices Python raises it in the main thread."""
    while not future.done():
        wait([future], timeout=STOP_POLL_S)
    return future.result()


def run_captured(
    argv: Sequence[str],
    timeout: float,
    stop: StopRequest | None = None,
    env_additions: Mapping[str, str] | None = None,
    limit: int = CAPTURE_LIMIT_BYTES,
    cwd: Path | None = None,
) -> tuple[int | None, str]:
    """A short CPU-only command (ncu --import): (exit code, stdout and stderr together, decoded leniently); code None
    when it could not start, ran past `timeout`, printed past `limit` bytes or the run is stopping (its whole process
    group is then killed; nothing starts once a stop was asked for)."""
    if stop is not None and stop.level:
        return None, "not started: the run is stopping"
    env = {**os.environ, **env_additions} if env_additions else None
    done = _bounded(argv, timeout, limit, cwd=cwd, env=env, merged=True, stop=stop)
    return (done.code, done.text) if done.why is None else (None, f"{done.text}\n({done.why})".lstrip())


def as_shown(output: str) -> str:
    """Each line as a terminal leaves it: nsys's importer and `nsys export` redraw a progress bar with carriage
    returns, a hundred times a step (6 KB of one line in llama_serve's trace log on the H100)."""
    return "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in output.split("\n"))
