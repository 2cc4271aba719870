"""Judge one ncu attempt from its exit code, console output and report. Pure. The exit code alone is not the
result: it is 0 on success and when nothing was profiled, and a non-zero code may be the application's, after a
good report (docs/ncu-behaviour.md, "Exit status and console markers")."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass

from ncucampaign.execute.rundir.status import Status

# ==ERROR== texts that mean ncu refused its command line (docs/ncu-behaviour.md).
_USAGE_PATTERNS = (
    r"unrecognised option",
    r"did not match any section",
    r"Invalid regex provided",
    r"requires --nvtx",
    r"does not exist or is not an executable",
    r"the argument .*is invalid",
    r"is ambiguous",
    r"Use --help for further details",
    r"Cannot lock GPU clock frequencies on MIG",
)
# Profiler failures a second attempt cannot fix.
_PERMANENT_PROFILER_PATTERNS = (r"ERR_NVGPUCTRPERM", r"LibraryNotLoaded")
# An application that cannot start fails alike every time (`python3 nosuch_app.py` was retried
# after 10 s): the interpreter cannot open the script (tests/fixtures/logs/missing_app.log), a shell finds no
# program or cannot execute it. Said in the one or two lines it printed: an application that printed more had
# started (a missing input file ends a traceback, "started" before an exit 127), and keeps its retries.
_CANNOT_START = re.compile(
    r"can't open file|command not found|cannot execute|: No such file or directory$|: not found$|: Permission denied$"
)
_CANNOT_START_LINES = 2
_APP_ERROR = re.compile(r"==ERROR== The application returned an error code \((-?\d+)\)")
_PROFILED = re.compile(r"^==PROF== Profiling \"([^\"]*)\"")
_REPORT = re.compile(r"^==PROF== Report: (.+)$")
_CONNECTED = re.compile(r"^==PROF== Connected to process (\d+)(?: \((.*)\))?")
_AVAILABLE_ITEM = re.compile(r"^\s*\d+\.\s+(\S.*)$")
# Exit codes that ncu reports for an application killed by a signal are the signal number
# (docs/ncu-behaviour.md: SIGABRT -> 6). Only name the signals a crash produces; 1 and 2 are ordinary exit codes too.
_CRASH_SIGNALS = {4, 6, 7, 8, 9, 11, 15}


@dataclass(frozen=True)
class ConsoleSummary:
    """What ncu's ==PROF==/==WARNING==/==ERROR== lines say about one attempt."""

    profiled: int = 0
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    no_kernels: bool = False
    available_kernels: tuple[str, ...] = ()
    nvtx_start_end_note: bool = False
    nvtx_push_pop_note: bool = False
    child_process_note: bool = False
    app_exit_code: int | None = None
    report_paths: tuple[str, ...] = ()
    shutdown_requested: bool = False
    connected: tuple[tuple[int, str], ...] = ()  # (pid, executable) per "Connected to process" line
    last_profiled: str | None = None  # the kernel of the last "==PROF== Profiling" line
    app_last_line: str | None = None  # the application's own last output line (its error, when it failed)
    app_lines: int = 0  # how many lines the application printed (ncu's and ours left out), counted up to 3

    @property
    def connected_pids(self) -> tuple[int, ...]:
        return tuple(pid for pid, _ in self.connected)


# The application writes to the same console: a line it leaves unfinished ("done" without a newline)
# is followed by ncu's next line on the same line. A marker starts a line wherever it appears.
_MARKER = re.compile(r"(?===(?:PROF|ERROR|WARNING)== )")


def _lines(text: str) -> Iterator[str]:
    for line in text.splitlines():
        pieces = [piece for piece in _MARKER.split(line) if piece]
        yield from pieces or [line]


_NOT_THE_APPLICATION = re.compile(r"^(==|# |\s*\d+\.\s|Available Kernels:)")  # ncu's lines and ours


def _app_lines(text: str) -> list[str]:
    """The application's own lines: not ncu's (==...==, its kernel list) nor ours (# ...)."""
    return [line.strip() for line in _lines(text) if line.strip() and not _NOT_THE_APPLICATION.match(line)]


# Range replay says it of ranges (ncu 2025.3.1, app-range on a 2-rank job): the same miss.
_MISSES = ("No kernels were profiled", "No ranges were profiled")


def _available_kernels(lines: list[str]) -> tuple[str, ...]:
    """The kernels ncu lists after "Available Kernels:" when nothing was profiled."""
    found: list[str] = []
    listing = False
    for line in lines:
        item = _AVAILABLE_ITEM.match(line) if listing else None
        if item:
            found.append(item.group(1).strip())
        listing = line.startswith("Available Kernels:") or item is not None
    return tuple(found)


def parse_console(text: str) -> ConsoleSummary:
    profiled = 0
    errors: list[str] = []
    warnings: list[str] = []
    reports: list[str] = []
    connected: list[tuple[int, str]] = []
    app_exit_code = None
    last_profiled = None
    lines, own = list(_lines(text)), _app_lines(text)
    for line in lines:
        if match := _PROFILED.match(line):
            profiled += 1
            last_profiled = match.group(1)
        elif line.startswith("==ERROR=="):
            errors.append(line[len("==ERROR==") :].strip())
            code = _APP_ERROR.match(line)
            if code:
                app_exit_code = int(code.group(1))
        elif line.startswith("==WARNING=="):
            warnings.append(line[len("==WARNING==") :].strip())
        elif match := _REPORT.match(line):
            reports.append(match.group(1).strip())
        elif match := _CONNECTED.match(line):
            connected.append((int(match.group(1)), match.group(2) or ""))
    joined = "\n".join(warnings)
    return ConsoleSummary(
        profiled=profiled,
        errors=tuple(errors),
        warnings=tuple(warnings),
        no_kernels=any(miss in w for w in warnings for miss in _MISSES),
        available_kernels=_available_kernels(lines),
        nvtx_start_end_note="match only start/end ranges" in joined,
        nvtx_push_pop_note="match only push/pop ranges" in joined,
        child_process_note="--target-processes all" in joined,
        app_exit_code=app_exit_code,
        report_paths=tuple(reports),
        shutdown_requested="==PROF== Trying to shutdown target application" in text,
        app_last_line=own[-1][:300] if own else None,
        app_lines=min(len(own), _CANNOT_START_LINES + 1),  # a log read back in part says the same
        connected=tuple(connected),
        last_profiled=last_profiled,
    )


@dataclass(frozen=True)
class Verdict:
    status: Status
    retryable: bool
    message: str
    cannot_start: bool = False  # the application failed before it could run: so would every run of it


def _has(patterns: tuple[str, ...], lines: tuple[str, ...]) -> str | None:
    for line in lines:
        if any(re.search(pattern, line) for pattern in patterns):
            return line
    return None


def classify_attempt(
    *,
    exit_code: int | None,
    console: ConsoleSummary,
    report_exists: bool,
    results: int | None,
    expected: int | None,
    timed_out: bool = False,
    interrupted: bool = False,
    timeout_s: float | None = None,
    stalled: str | None = None,
) -> Verdict:
    """One attempt's status; `results` is the report's result count when it could be read."""
    kept = f"; report kept ({results} result{'s' if results != 1 else ''})" if report_exists else ""
    if interrupted:
        return Verdict(Status.INTERRUPTED, False, f"interrupted{kept or '; no report'}")
    if stalled:  # ncu then reports the application's exit code after SIGINT: not the cause
        return Verdict(Status.REPLAY_HANG, False, f"stopped early: {stalled}{kept}")
    if timed_out:
        limit = f" after {timeout_s:g} s" if timeout_s else ""
        return Verdict(Status.TIMED_OUT, True, f"timed out{limit}; the process group was stopped{kept}")
    usage = _has(_USAGE_PATTERNS, console.errors)
    if usage:
        return Verdict(Status.USAGE_ERROR, False, f"ncu rejected the command: {usage}")
    if exit_code is not None and exit_code < 0:
        name = _signal_name(-exit_code)
        return Verdict(Status.PROFILER_ERROR, True, f"ncu was killed by {name}{kept}")
    if console.app_exit_code is not None and console.app_exit_code != 0:
        return _app_failed(console, console.app_exit_code, kept)
    if exit_code:
        first = console.errors[0] if console.errors else _exit_text(exit_code)
        permanent = _has(_PERMANENT_PROFILER_PATTERNS, console.errors) is not None
        return Verdict(Status.PROFILER_ERROR, not permanent, f"{first}{kept}")
    if console.no_kernels:
        what = "ranges" if any("No ranges were profiled" in w for w in console.warnings) else "kernels"
        return Verdict(Status.NO_KERNELS, False, f"no {what} were profiled: the filters matched nothing")
    if console.errors:
        return Verdict(Status.PROFILER_ERROR, True, f"{console.errors[0]}{kept}")
    if not report_exists:
        return Verdict(Status.PROFILER_ERROR, True, "ncu exited 0 but wrote no report")
    if expected is not None and results is not None and results < expected:
        return Verdict(Status.INCOMPLETE, False, f"the report holds {results} of the {expected} results asked for")
    count = f"{results} result{'s' if results != 1 else ''}" if results is not None else "report written"
    return Verdict(Status.OK, False, count)


def _app_failed(console: ConsoleSummary, code: int, kept: str) -> Verdict:
    """The application failed: retried, unless it cannot start (it would fail alike every time)."""
    hint = f" (killed by {_signal_name(code)}?)" if code in _CRASH_SIGNALS else ""
    said = f": {console.app_last_line}" if console.app_last_line else ""
    message = f"the application returned error code {code}{hint}{said}{kept}"
    never_started = console.app_lines <= _CANNOT_START_LINES and _CANNOT_START.search(console.app_last_line or "")
    if not console.profiled and never_started:
        return Verdict(Status.APP_FAILED, False, f"{message}; not retried: the application cannot start", True)
    return Verdict(Status.APP_FAILED, True, message)


def _exit_text(code: int) -> str:
    if code > 128 and code - 128 in signal.valid_signals():
        return f"ncu ended by {_signal_name(code - 128)} (exit code {code})"
    return f"ncu exited with code {code}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
