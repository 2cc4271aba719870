"""Stop requests from Ctrl-C and SIGTERM. A handler only raises a level and writes a byte to wake-up pipes (one
taking a lock deadlocks when a second signal comes while the first holds it); whoever waits watches the pipes."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time
import weakref
from collections.abc import Callable, Iterator


class StopRequest:
    """Level 1 stops the running attempt gracefully and starts nothing new; level 2 kills at once."""

    def __init__(self) -> None:
        self.level = 0
        self.by_signal = False  # a person (or the system) asked: only then is the stop announced
        self._pipes: list[tuple[int, int]] = []
        self._sleep_pipe = self.wakeup_pipe()
        weakref.finalize(self, _close_pipes, self._pipes)

    def wakeup_pipe(self) -> int:
        """A new pipe that every request writes to; returns its read end (for select)."""
        read, write = os.pipe()
        os.set_blocking(read, False)
        os.set_blocking(write, False)
        self._pipes.append((read, write))
        return read

    def request(self, level: int | None = None) -> None:
        """Safe to call from a signal handler."""
        self.level = max(self.level, min(level if level is not None else self.level + 1, 2))
        for _, write in self._pipes:
            with contextlib.suppress(OSError):  # a full pipe already says "wake up"
                os.write(write, b"!")

    def sleep(self, seconds: float) -> None:
        """Sleep that a stop request cuts short (used between retries)."""
        end = time.monotonic() + seconds
        while not self.level and (remaining := end - time.monotonic()) > 0:
            select.select([self._sleep_pipe], [], [], remaining)
            drain(self._sleep_pipe)


def _close_pipes(pipes: list[tuple[int, int]]) -> None:
    for read, write in pipes:
        for fd in (read, write):
            with contextlib.suppress(OSError):
                os.close(fd)
    pipes.clear()


def drain(fd: int) -> None:
    with contextlib.suppress(OSError):
        while os.read(fd, 512):
            pass


@contextlib.contextmanager
def stop_on_signals(stop: StopRequest, announce: Callable[[int], None]) -> Iterator[None]:
    """First SIGINT (or any SIGTERM or SIGHUP): stop gracefully; a second SIGINT: kill the attempts at once.
    `announce(level)` runs on a watcher thread, never inside the handler."""

    handling = False

    def on_signal(signum: int, _frame: object) -> None:
        # A storm of signals re-enters the handler between its own bytecodes: a nested call returns at
        # once (it would say nothing new), so the nesting cannot grow into a RecursionError.
        nonlocal handling
        if handling or stop.level >= 2:
            return
        handling = True
        try:
            stop.by_signal = True
            stop.request(None if signum == signal.SIGINT else 1)
        finally:
            handling = False

    wakeup = stop.wakeup_pipe()
    finished = threading.Event()
    watcher = threading.Thread(target=_watch, args=(stop, wakeup, finished, announce), daemon=True)
    watcher.start()
    # SIGHUP (the terminal closed, a session ended) stops as SIGTERM does, gracefully, its summary printed; but not
    # where the process was started ignoring it (`nohup`: a run meant to outlive its terminal)
    hangup = [signal.SIGHUP] if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN else []
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM, *hangup)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            # Stopping: the run is over and only its summary is left to print; more signals of the
            # same storm must not interrupt that with a KeyboardInterrupt.
            signal.signal(sig, signal.SIG_IGN if stop.level else handler)
        finished.set()
        stop.request(0)  # wakes the watcher so that it sees `finished`
        watcher.join(timeout=5)


def _watch(stop: StopRequest, wakeup: int, finished: threading.Event, announce: Callable[[int], None]) -> None:
    announced = 0
    while not finished.is_set():
        select.select([wakeup], [], [], 1.0)
        drain(wakeup)
        if stop.level > announced and stop.by_signal and not finished.is_set():
            announced = stop.level
            announce(announced)
