"""Application errors that repeat across targets. A workload that cannot start fails every target alike before
ncu profiles anything, and retrying each pays it again (21 identical failures, each retried after 10 s). One
that cannot start at all (no such script) is started no more: later runs of the same command line, folder and
environment are closed unstarted, naming the run that found it."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Hashable

from ncucampaign.execute.rundir.status import kind_of

# First attempts of this many application runs ending with the same application error make it
# deterministic.
SAME_ERROR_TARGETS = 2
# ...and this many (the discovery trace and two targets, say) make it the command's: its other targets are not
# started (60 targets of an application that exits `MODEL_DIR is not set` were 61 starts).
SAME_ERROR_STOPS = 3


class RepeatedFailures:
    """The application errors first attempts ended with, across the run (shared by its GPU lanes)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: defaultdict[str, list[str]] = defaultdict(list)
        self._unstartable: dict[Hashable, tuple[str, str | None]] = {}  # the run that found it, and what it said
        self._failing: dict[Hashable, str] = {}  # application -> why its other targets are not started

    def cannot_start(self, application: Hashable, run: str, said: str | None = None) -> None:
        """`run` found that `application` (its command line, folder and environment) cannot start; `said`: the
        application's last line (`can't open file ...`), which every target it closes repeats."""
        with self._lock:
            self._unstartable.setdefault(application, (run, said))

    def found_unstartable(self, application: Hashable) -> str | None:
        """Who found that `application` cannot start ('the discovery trace shared/trace-1'), or None."""
        with self._lock:
            run, _ = self._unstartable.get(application, (None, None))
        if run is None:
            return None
        if not run.startswith("shared/"):
            return f"target {run}"
        return {"trace": "the discovery trace", "timing": "the timing pass"}.get(
            kind_of(run), "the shared run"
        ) + f" {run}"

    def failing(self, application: Hashable, error: str) -> None:
        """`application`'s first attempts ended with `error` SAME_ERROR_STOPS times: its other targets are not
        started (what they would end with is said instead)."""
        with self._lock:
            self._failing.setdefault(application, error)

    def not_starting(self, application: Hashable) -> str | None:
        """Why a target of `application` is not started, or None: it cannot start, or it fails alike every time."""
        found = self.found_unstartable(application)
        if found is not None:
            with self._lock:
                said = self._unstartable[application][1]
            return f"not started: {found} found that the application cannot start" + (f": {said}" if said else "")
        with self._lock:
            error = self._failing.get(application)
        if error is None:
            return None
        return (
            f"not started: {self.described(error)} ended with this application error before anything was profiled: "
            f"{error}"
        )

    def note(self, error: str, run: str) -> None:
        """One more application run's first attempt (a target's, a shared run's, the discovery
        trace's) ended with `error`."""
        with self._lock:
            self._seen[error].append(run)

    def count(self, error: str) -> int:
        with self._lock:
            return len(self._seen.get(error, ()))

    def deterministic(self, error: str) -> bool:
        return self.count(error) >= SAME_ERROR_TARGETS

    def described(self, error: str) -> str:
        """'the first attempts of the discovery trace and 2 targets' (a trace is no target: a 21-target
        campaign said '22 targets')."""
        with self._lock:
            runs = list(self._seen.get(error, ()))
        return "the first attempts of " + runs_text(runs)


def runs_text(runs: list[str]) -> str:
    kinds = [kind_of(r) if r.startswith("shared/") else "target" for r in runs]
    traces, timing, shared = kinds.count("trace"), kinds.count("timing"), kinds.count("union")
    targets = len(runs) - traces - timing - shared
    parts = []
    if traces:
        parts.append("the discovery trace" if traces == 1 else f"{traces} discovery traces")
    if timing:
        parts.append("the timing pass")
    if shared:
        parts.append(f"{shared} shared run{'s' if shared > 1 else ''}")
    if targets:
        parts.append(f"{targets} target{'s' if targets > 1 else ''}")
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
