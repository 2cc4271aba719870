"""One error hierarchy; every error carries the exit code the CLI returns for it. The CLI prints `str(error)` of
an `NcuCampaignError` only (messages for users, never tracebacks); anything else escaping is a bug (exit 70)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

# Exit codes, documented in README.md ("Exit codes").
EXIT_OK = 0
EXIT_TARGETS_FAILED = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3
EXIT_NOT_COMPARABLE = 4  # compare --reference: the reference is of another ncu, driver, clock setting or GPU
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


class NcuCampaignError(Exception):
    """Base class: a problem the user can act on."""

    exit_code: int = EXIT_INTERNAL


class UsageError(NcuCampaignError):
    """Wrong command-line use (unknown target in --only, missing file, ...)."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class Problem:
    """One validation problem, located in a campaign file."""

    path: tuple[str | int, ...]
    message: str
    line: int | None = None

    def key_path(self) -> str:
        return format_key_path(self.path)


def format_key_path(path: tuple[str | int, ...]) -> str:
    """('targets', 2, 'launch_count') -> 'targets[2].launch_count'."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "(top level)"


class CampaignError(UsageError):
    """A campaign file that cannot be used (bad YAML, unknown keys, wrong types, nonsense values), each problem
    once, in file order. `partial` (the targets valid on their own) lets the planner add its problems."""

    def __init__(self, file: str, problems: list[Problem], partial: Any = None) -> None:
        self.file = file
        unique = list(dict.fromkeys(problems))
        self.problems = sorted(unique, key=lambda problem: problem.line or 0)
        self.partial = partial
        super().__init__(self.render())

    def render(self, outcome: str = "") -> str:
        """Every problem as file:line: key.path: message, then the count (and `outcome`)."""
        return "\n".join([*self.problem_lines(), self.count_line(outcome)])

    def problem_lines(self) -> list[str]:
        """Each problem as file:line: key.path: message."""
        lines = []
        for problem in self.problems:
            where = f"{self.file}:{problem.line}" if problem.line else self.file
            lines.append(printable(f"{where}: {problem.key_path()}: {problem.message}"))
        return lines

    def count_line(self, outcome: str = "") -> str:
        return printable(f"{self.file}: {plural(len(self.problems), 'problem')}{outcome}")


class EnvironmentProblem(NcuCampaignError):
    """The machine is not ready: ncu missing, run directory not writable, run directory locked."""

    exit_code = EXIT_ENVIRONMENT


class ReportUnreadable(UsageError):
    """A report file that cannot be read: truncated, corrupt, or not a report at all."""


class NoReportReader(EnvironmentProblem):
    """Neither NVIDIA's ncu-report wheel nor ncu's own extras/python copy can be imported."""


def first_line(exc: BaseException) -> str:
    """An exception's message, first line only (pydantic's run over many), in printable characters."""
    text = str(exc).strip().splitlines()
    return printable(text[0] if text else type(exc).__name__)


_CONTROL = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7F, 0xA0)]}
_CONTROL.update({ord("\t"): "\\t", ord("\r"): "\\r", ord("\n"): "\\n"})
_CONTROL_BUT_NEWLINES = {code: escape for code, escape in _CONTROL.items() if code != ord("\n")}


def printable(text: str, keep_newlines: bool = False) -> str:
    """Control characters written as escapes, so that a value from a file or another program cannot
    drive the terminal: C0 and C1 controls (ESC, BEL, ...), and every other character Python calls
    unprintable (bidirectional overrides, line and paragraph separators) as \\uXXXX. The terminal's
    one helper (ncucampaign/escaping.py has the other media's)."""
    if text.isprintable():  # no control character (the common case: summarize calls this a million times)
        return text
    text = text.translate(_CONTROL_BUT_NEWLINES if keep_newlines else _CONTROL)
    if text.isprintable() or (keep_newlines and text.replace("\n", "").isprintable()):
        return text
    return "".join(c if c.isprintable() or c == "\n" else f"\\u{ord(c):04x}" for c in text)


def control_characters(text: str) -> list[str]:
    """The control characters `text` holds, once each, in order of code point: C0 and C1 (a newline, a tab, ESC)
    and the Unicode line and paragraph separators, none of which a path or a name needs (spec/values.py's
    PATH_PATTERN says the same for a campaign file's paths)."""
    if text.isprintable():
        return []
    return sorted({char for char in text if unicodedata.category(char) in ("Cc", "Zl", "Zp")})


def plural(count: int, noun: str) -> str:
    """plural(1, 'target') -> '1 target'; plural(2, 'target') -> '2 targets'."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
