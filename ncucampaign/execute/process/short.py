"""Short commands whose output is wanted whole (ncu --import, --version, git, sbatch, a reader
worker): captured, bounded by a timeout, and (when handed the run's stop request) ended with the run.
Each runs in its own session, so that stopping it stops everything it started."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from ncucampaign.execute.process.signals import StopRequest

STOP_POLL_S = 0.25  # how often a short command (ncu --import) looks whether the run is stopping


def run_python(args: Sequence[str], timeout: float, env_additions: Mapping[str, str]) -> tuple[int | None, str]:
    """This Python with `args` (a worker module): (exit code, stdout); code None when it timed out.
    A negative code is the signal that ended it."""
    try:
        done = subprocess.run(
            [sys.executable, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **env_additions},
        )
    except subprocess.TimeoutExpired:
        return None, ""
    return done.returncode, done.stdout


def probe(argv: Sequence[str], timeout: float = 15.0, cwd: Path | None = None) -> str | None:
    """Run a short informational command; its stdout, or None when it is missing or fails."""
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def run_captured(
    argv: Sequence[str],
    timeout: float,
    stop: StopRequest | None = None,
    env_additions: Mapping[str, str] | None = None,
) -> tuple[int | None, str]:
    """A short CPU-only command (ncu --import): (exit code, stdout and stderr together); code None
    when it could not start, ran past `timeout` or the run is stopping (its whole process group is
    then killed; nothing starts once a stop was asked for)."""
    if stop is not None and stop.level:
        return None, "not started: the run is stopping"
    try:
        proc = subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **env_additions} if env_additions else None,
        )
    except OSError as exc:
        return None, str(exc)
    deadline = time.monotonic() + timeout
    while True:
        try:  # in slices, so that a stop request ends it promptly (communicate keeps what it read)
            out, _ = proc.communicate(timeout=max(0.0, min(STOP_POLL_S, deadline - time.monotonic())))
            return proc.returncode, out.decode(errors="replace")
        except subprocess.TimeoutExpired:
            stopping = stop is not None and stop.level
            if not stopping and time.monotonic() < deadline:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            why = "stopped: the run is stopping" if stopping else f"stopped after {timeout:g} s"
            return None, out.decode(errors="replace") + f"\n({why})"
