"""The discovery trace of a shared run (every launch, one metric, NVTX stacks) and its cache.

A trace is reused across runs only when it describes the same launches: the same application
command, environment and working directory, the same workload commit with a clean tree, the same
ncu and the same GPU model. A stale trace cannot produce a wrong result anyway: every split is
verified against the union run itself, and a mismatch makes the target run alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ncucampaign.execute.rundir.manifest import GitInfo

CACHE_FOLDER = Path(".cache") / "traces"


@dataclass(frozen=True)
class TraceKey:
    digest: str
    reusable: bool  # False: the workload is not a clean git checkout, so only this run may use it

    @property
    def short(self) -> str:
        return self.digest[:12]


def trace_key(
    argv: list[str], env: dict[str, str], cwd: str, git: GitInfo | None, ncu_version: str | None, gpu: str | None
) -> TraceKey:
    data = {"argv": argv, "env": env, "cwd": cwd, "ncu": ncu_version, "gpu": gpu}
    data["commit"] = git.commit if git else None
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return TraceKey(digest, reusable=git is not None and not git.dirty)


class TraceCache:
    """Traces by key: in memory for this run, on disk under <runs root>/.cache/traces for later runs."""

    def __init__(self, runs_root: Path | None) -> None:
        self.folder = runs_root / CACHE_FOLDER if runs_root is not None else None
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._this_run: dict[str, Path] = {}

    def key_lock(self, key: TraceKey) -> threading.Lock:
        """Held while a trace is found or made, so that two lanes never run the same trace at once."""
        with self._lock:
            return self._locks.setdefault(key.digest, threading.Lock())

    def find(self, key: TraceKey) -> tuple[Path, bool] | None:
        """(the trace, True when it came from an earlier run), or None."""
        if key.digest in self._this_run and self._this_run[key.digest].is_file():
            return self._this_run[key.digest], False
        cached = self._path(key)
        if key.reusable and cached is not None and cached.is_file() and not cached.is_symlink():
            return cached, True
        return None

    def remember(self, key: TraceKey, report: Path) -> Path:
        """Keep a trace just made; the cached copy when the cache can hold it, else the report itself."""
        self._this_run[key.digest] = report
        cached = self._path(key)
        if not key.reusable or cached is None:
            return report
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=cached.parent, suffix=".partial")
            os.close(handle)
            os.unlink(temporary)
            try:
                os.link(report, temporary)  # the same file, no second copy of a large trace
            except OSError:
                shutil.copyfile(report, temporary)  # another filesystem
            os.replace(temporary, cached)
        except OSError:
            pass  # a cache that cannot be written only costs a later run its trace
        return report

    def forget(self, digest: str) -> None:
        """Drop a cached trace that cannot be used (damaged); the next run traces again."""
        if self.folder is not None:
            with contextlib.suppress(OSError):
                (self.folder / f"{digest}.ncu-rep").unlink()

    def _path(self, key: TraceKey) -> Path | None:
        return self.folder / f"{key.digest}.ncu-rep" if self.folder is not None else None
