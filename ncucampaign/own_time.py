"""A run's own seconds, by phase (issue 41): the wall time each phase took, less the time its thread
waited on ncu (or on the application, git, nvidia-smi). What ncucampaign itself costs a run, kept in
the manifest as `own_seconds`.

Phases nest: a phase's inner phases (a manifest write inside a split) count for the inner phase only.
Each thread keeps its own stack; the totals add every thread's, so a split that runs while the GPU
runs the next union counts in full although it delayed nothing. Time outside every phase (the
interpreter exiting, the final table printed after the manifest) is not counted.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

START_UP = "start-up"  # from the process's start to the command's first line: Python and the imports
PLANNING = "planning"  # loading, validating, planning, provenance, opening the run, partitions
TRACE_LISTING = "trace listing"  # reading the discovery trace's launches
SPLITS = "splits"  # splitting a shared run's report into its members' reports
VERIFICATION = "verification"  # checking each split against what its member wanted
RECORDS = "records"  # writing the manifest
REPORTS = "reports"  # reading the results out of reports
OTHER = "other"  # running targets: attempts, their logs and consoles, the progress lines
PHASES = (START_UP, PLANNING, TRACE_LISTING, SPLITS, VERIFICATION, RECORDS, REPORTS, OTHER)


@dataclass
class _Open:
    name: str | None
    started: float
    waited: float = 0.0  # on child processes, and in inner phases that ended


class OwnClock:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[str, float] = {}
        self._local = threading.local()

    def _stack(self) -> list[_Open]:
        stack: list[_Open] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def reset(self) -> None:
        with self._lock:
            self._totals = {}

    def add(self, name: str, seconds: float) -> None:
        with self._lock:
            self._totals[name] = self._totals.get(name, 0.0) + max(0.0, seconds)

    @contextlib.contextmanager
    def phase(self, name: str | None) -> Iterator[None]:
        """Time in the block counts for `name`, less what inner phases and waits took; with None it
        counts for nothing (a wait: see `waiting`)."""
        stack = self._stack()
        frame = _Open(name, time.perf_counter())
        stack.append(frame)
        try:
            yield
        finally:
            stack.pop()
            wall = time.perf_counter() - frame.started
            if name is not None:
                self.add(name, wall - frame.waited)
            if stack:
                stack[-1].waited += wall

    def waiting(self) -> contextlib.AbstractContextManager[None]:
        """Around a wait on a child process, or on threads that count their own phases: not this
        thread's own time (a phase inside it, in this thread, still counts for itself)."""
        return self.phase(None)

    def totals(self) -> dict[str, float]:
        """Seconds per phase so far, rounded to milliseconds; the calling thread's open phases count
        up to now (the manifest is written from inside them)."""
        now = time.perf_counter()
        with self._lock:
            totals = dict(self._totals)
        inner = 0.0
        for frame in reversed(self._stack()):
            wall = now - frame.started
            if frame.name is not None:
                totals[frame.name] = totals.get(frame.name, 0.0) + max(0.0, wall - frame.waited - inner)
            inner = wall
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
