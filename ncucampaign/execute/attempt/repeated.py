"""Application errors that repeat across targets. A workload that cannot start (a missing module, a
wrong path) fails every target the same way before ncu profiles anything; retrying each of them
only pays the same failure again (issue 22: 21 identical failures, each retried after 10 s)."""

from __future__ import annotations

import threading
from collections import Counter

# First attempts of this many targets ending with the same application error make it deterministic.
SAME_ERROR_TARGETS = 2


class RepeatedFailures:
    """The application errors first attempts ended with, across the run (shared by its GPU lanes)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: Counter[str] = Counter()

    def note(self, error: str) -> None:
        """One more target's first attempt ended with `error`."""
        with self._lock:
            self._seen[error] += 1

    def targets(self, error: str) -> int:
        with self._lock:
            return self._seen[error]

    def deterministic(self, error: str) -> bool:
        return self.targets(error) >= SAME_ERROR_TARGETS
