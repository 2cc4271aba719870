"""A run's own seconds by phase (`own_seconds`): wall seconds of its own work outside the time ncu profiled.
Each thread keeps a stack of phases (None: a wait). A moment counts when some thread works and no ncu profiles;
a moment several threads work is shared among their phases, so phases add up to wall seconds. Waits on other
programs (ncu --import, git, nvidia-smi) are theirs; time outside every phase is not counted."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

START_UP = "start-up"  # from the process's start to the command's first line: Python and the imports
PLANNING = "planning"  # loading, validating, planning, provenance, opening the run, partitions
TRACE_LISTING = "trace listing"  # reading the discovery trace's launches
SPLITS = "splits"  # splitting a shared run's report into its members' reports
VERIFICATION = "verification"  # checking each split against what its member wanted
RECORDS = "records"  # writing the manifest
REPORTS = "reports"  # reading the results out of reports
OTHER = "other"  # running targets: attempts, their logs and consoles, the progress lines
PHASES = (START_UP, PLANNING, TRACE_LISTING, SPLITS, VERIFICATION, RECORDS, REPORTS, OTHER)


class OwnClock:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[str, float] = {}
        self._working: dict[int, str] = {}  # thread -> the phase it works in now
        self._since = time.perf_counter()  # when the working threads last changed
        self._profiling = 0  # ncu processes profiling now
        self._local = threading.local()

    def _stack(self) -> list[str | None]:
        stack: list[str | None] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def _advance(self) -> None:
        """Share the wall time since the last change among the phases working in it (under the lock)."""
        now = time.perf_counter()
        if self._working and not self._profiling:
            share = (now - self._since) / len(self._working)
            for name in self._working.values():
                self._totals[name] = self._totals.get(name, 0.0) + share
        self._since = now

    def _now_in(self, stack: list[str | None]) -> None:
        thread = threading.get_ident()
        with self._lock:
            self._advance()
            top = stack[-1] if stack else None
            if top is None:
                self._working.pop(thread, None)
            else:
                self._working[thread] = top
                self._totals.setdefault(top, 0.0)

    def reset(self) -> None:
        with self._lock:
            self._advance()
            self._totals = {}

    def add(self, name: str, seconds: float) -> None:
        with self._lock:
            self._totals[name] = self._totals.get(name, 0.0) + max(0.0, seconds)

    @contextlib.contextmanager
    def phase(self, name: str | None) -> Iterator[None]:
        """Time in the block counts for `name` while no inner phase or wait runs in this thread; with
        None it counts for nothing (a wait: see `waiting`)."""
        stack = self._stack()
        stack.append(name)
        self._now_in(stack)
        try:
            yield
        finally:
            stack.pop()
            self._now_in(stack)

    def waiting(self) -> contextlib.AbstractContextManager[None]:
        """Around a wait on a child process, or on threads that count their own phases: not this
        thread's own time (a phase inside it, in this thread, still counts for itself)."""
        return self.phase(None)

    @contextlib.contextmanager
    def profiling(self) -> Iterator[None]:
        """Around ncu profiling: a wait for this thread, and no thread's own time while it lasts."""
        with self.waiting():
            with self._lock:
                self._advance()
                self._profiling += 1
            try:
                yield
            finally:
                with self._lock:
                    self._advance()
                    self._profiling -= 1

    def totals(self) -> dict[str, float]:
        """Seconds per phase so far, open phases up to now (the manifest is written from inside
        them), rounded to milliseconds."""
        with self._lock:
            self._advance()
            totals = dict(self._totals)
        return {name: round(totals[name], 3) for name in PHASES if name in totals}


CLOCK = OwnClock()  # one per process: a run is one process (a Slurm or Kubernetes task is its own)


def since_process_start() -> float | None:
    """Seconds since this process started (Linux: /proc), None where that cannot be known."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as uptime:
            up = float(uptime.read().split()[0])
        return max(0.0, up - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None
