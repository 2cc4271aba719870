"""The one module that starts processes. An attempt runs in a session of its own, so that a timeout or an
interruption reaches the whole group (a signal to ncu alone leaves the application running: docs/ncu-behaviour.md,
"Signals"): SIGINT (ncu stops the application and writes its report), SIGTERM, SIGKILL, and the rest after."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.process.log_tail import LogTail
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.store import open_regular
from ncucampaign.own_time import CLOCK

POLL_S = 0.05


@dataclass(frozen=True)
class ProcessOutcome:
    exit_code: int | None  # Popen.returncode: negative means killed by that signal
    seconds: float
    timed_out: bool
    interrupted: bool
    signals_sent: tuple[str, ...]
    leftovers_killed: int
    stalled: str | None = None  # why `watch` stopped the attempt early


def run_in_group(
    argv: Sequence[str],
    *,
    log_path: Path,
    cwd: Path,
    env_additions: Mapping[str, str],
    timeout: float | None,
    stop: StopRequest,
    grace: float = 20.0,
    echo: Callable[[str], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_signal: Callable[[str], None] | None = None,
    watch: Callable[[], str | None] | None = None,
) -> ProcessOutcome:
    """Run argv with stdout+stderr appended to log_path; stop the whole group on timeout or request. `grace`:
    seconds from SIGINT to SIGTERM and on to SIGKILL (ncu needs time to stop the application and write the
    report); `watch`: asked while it runs, a reason it returns stops the attempt like a timeout."""
    start = time.monotonic()
    with os.fdopen(open_regular(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as log:
        offset = log.tell()
        proc = _started(argv, log, cwd, {**os.environ, **env_additions})
    if on_start is not None:
        on_start(proc.pid)
    tail = LogTail(log_path, offset, echo) if echo else None
    try:
        with CLOCK.profiling():  # ncu's time, not the run's own (nor what other threads do meanwhile)
            outcome = _supervise(proc, start, timeout, stop, grace, on_signal, watch)
    finally:
        if tail:
            tail.stop()
    return outcome


def _started(argv: Sequence[str], log: IO[bytes], cwd: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """The process, in a session of its own, its output into `log`; an EnvironmentProblem when it
    cannot start (no such program, no such folder, not allowed, not a program)."""
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except NotADirectoryError as exc:
        raise EnvironmentProblem(f"cannot start in {cwd}: {exc.strerror}") from None
    except OSError as exc:  # no such program, not allowed, no program at all (Exec format error), a link loop
        raise EnvironmentProblem(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None


def _supervise(
    proc: subprocess.Popen[bytes],
    start: float,
    timeout: float | None,
    stop: StopRequest,
    grace: float,
    on_signal: Callable[[str], None] | None,
    watch: Callable[[], str | None] | None = None,
) -> ProcessOutcome:
    group = proc.pid  # start_new_session: the group id is the leader's pid
    deadline = start + timeout if timeout else None
    timed_out = interrupted = False
    stalled: str | None = None
    sent: list[str] = []
    next_step_at: float | None = None
    exited = _exit_waiter(proc)

    def send(sig: signal.Signals) -> None:
        _signal_group(group, sig, sent)
        if on_signal is not None:
            on_signal(sig.name)

    while proc.poll() is None:
        now = time.monotonic()
        if stop.level >= 2 and "SIGKILL" not in sent:
            interrupted = True
            send(signal.SIGKILL)
        elif not sent and (
            stop.level >= 1 or (deadline is not None and now >= deadline) or (watch and (stalled := watch()))
        ):
            interrupted = stop.level >= 1
            timed_out = not interrupted and stalled is None
            send(signal.SIGINT)
            next_step_at = now + grace
        elif next_step_at is not None and now >= next_step_at:
            next_step_at = _escalate(sent, send, now, grace)
        exited(POLL_S)
    leftovers = _kill_leftovers(group)
    # A stop requested while ncu was dying of the same signal (Slurm's SIGTERM reaches every process
    # of a job at once): the attempt was interrupted, not failed.
    interrupted = interrupted or (stop.level >= 1 and not timed_out and stalled is None)
    seconds = time.monotonic() - start
    return ProcessOutcome(proc.returncode, seconds, timed_out, interrupted, tuple(sent), leftovers, stalled)


def _escalate(sent: list[str], send: Callable[[signal.Signals], None], now: float, grace: float) -> float | None:
    """After SIGINT: SIGTERM once `grace` has passed, SIGKILL after another; when to take the next step."""
    if "SIGTERM" not in sent:
        send(signal.SIGTERM)
        return now + grace
    if "SIGKILL" not in sent:
        send(signal.SIGKILL)
    return None


def _exit_waiter(proc: subprocess.Popen[bytes]) -> Callable[[float], None]:
    """Sleep until the process exits or `seconds` pass: a pidfd wakes at once on Linux, else poll."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return time.sleep

    def wait(seconds: float) -> None:
        select.select([pidfd], [], [], seconds)

    weakref.finalize(proc, os.close, pidfd)
    return wait


def _signal_group(group: int, sig: signal.Signals, sent: list[str]) -> None:
    sent.append(sig.name)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, sig)


def group_members(group: int) -> list[int]:
    """Live (non-zombie) processes whose process group is `group`."""
    if not sys.platform.startswith("linux"):
        try:
            os.killpg(group, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [group]
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()  # after "pid (comm)": state ppid pgrp ...
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == group:
            members.append(int(entry.name))
    return members


def _kill_leftovers(group: int, grace: float = 3.0) -> int:
    """Kill what the attempt left behind in its group; returns how many processes were found."""
    found = group_members(group)
    if not found:
        return 0
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return len(found)
        end = time.monotonic() + wait
        while time.monotonic() < end:
            if not group_members(group):
                return len(found)
            time.sleep(POLL_S)
    return len(found)


RUN_MARKER = "NCUCAMPAIGN_RUN_DIR"  # in every attempt's environment: finds a crashed run's processes


def marked_groups(run_dir: str) -> set[int]:
    """The process groups of every process that carries this run's marker (ncu, the application,
    `ncu --import`): what a runner killed with -9 left behind. Ours are excluded."""
    marker = f"{RUN_MARKER}={run_dir}".encode()
    groups = set()
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                groups.add(os.getpgid(int(entry.name)))
        except (OSError, ValueError):
            continue  # gone, or another user's
    return groups - {os.getpgrp()}


def kill_orphaned_group(group: int, run_dir: str, wait: float = 5.0) -> int:
    """Kill a process group a crashed runner left, if it is this run's (pids get reused)."""
    members = group_members(group)
    marker = f"{RUN_MARKER}={run_dir}".encode()
    ours = False
    for pid in members:
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                ours = ours or marker in handle.read().split(b"\0")
        except OSError:
            continue
    if not ours:
        return 0
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    end = time.monotonic() + wait
    while group_members(group) and time.monotonic() < end:
        time.sleep(POLL_S)
    return len(members)
