"""The application's command as argv: split like a shell would, refusing the shell syntax that no
shell will interpret (docs/ncu-behaviour.md: ncucampaign runs no shell unless `shell: true`). Pure."""

from __future__ import annotations

import functools
import itertools
import re
import shlex
from pathlib import Path

from ncucampaign.errors import Problem


class PlanProblems(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems)
        self.problems = problems


def command_argv(command: tuple[str, ...] | str, shell: bool, where: tuple[str | int, ...]) -> tuple[str, ...]:
    """The argv of a command; PlanProblems naming `where` when no shell would run it as written."""
    found = _argv(command, shell)
    if isinstance(found, str):
        raise PlanProblems([Problem(where, found)])
    return found


@functools.lru_cache(maxsize=256)  # every target of a campaign usually runs the same command
def _argv(command: tuple[str, ...] | str, shell: bool) -> tuple[str, ...] | str:
    if shell:
        text = command if isinstance(command, str) else shlex.join(command)
        return ("/bin/sh", "-c", text)
    if isinstance(command, str):
        try:
            argv = tuple(shlex.split(command))
        except ValueError as exc:
            return f"cannot split the command like a shell would: {exc}"
    else:
        argv = tuple(command)
    return _shell_syntax(command, argv) or argv


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_OPERATORS = {"|", "||", "&", "&&", ";", ">", ">>", "<", "<<", "2>", "2>>", "&>", "2>&1", ">&", "(", ")"}


def _shell_syntax(command: tuple[str, ...] | str, argv: tuple[str, ...]) -> str | None:
    """Shell syntax in a command that no shell runs: `VAR=1 python ...` or `... | tee out` would reach the
    program as literal arguments (the manual writes `CUDA_VISIBLE_DEVICES=0 ncu ...`)."""
    problems = []  # every one at once: a user should not need a round per problem
    leading = list(itertools.takewhile(lambda word: _ASSIGNMENT.match(word), argv))
    if leading:
        env = ", ".join(f"{word.split('=', 1)[0]}: {word.split('=', 1)[1]!r}" for word in leading)
        problems.append(
            f"{leading[0]!r} is a shell variable assignment, and no shell runs this command: write env: {{{env}}}"
        )
    if isinstance(command, str):
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        operators = [word for word in lexer if word in _OPERATORS]
    else:
        operators = [word for word in argv if word in _OPERATORS]
    if operators:
        shown = ", ".join(repr(word) for word in dict.fromkeys(operators))
        problems.append(
            f"{shown} {'is' if len(set(operators)) == 1 else 'are'} shell syntax, and no shell runs this command "
            "(it would be a literal argument): drop it, or set shell: true"
        )
    return "; and ".join(problems) or None


_PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")


def is_python(program: str) -> bool:
    """Whether a command's program is a Python interpreter (python, python3, python3.12, by any path)."""
    return _PYTHON.match(Path(program).name) is not None


@functools.lru_cache(maxsize=256)  # asked for every invocation; a campaign's commands are few
def script_of(argv: tuple[str, ...]) -> str | None:
    """The file a command line runs: a Python script (after the interpreter's own options), or a
    program named by a path (`./run.sh`); None for a module (-m), a string (-c) or a program on PATH."""
    if not argv:
        return None
    if not is_python(argv[0]):
        return argv[0] if "/" in argv[0] else None
    at = 1
    while at < len(argv) and argv[at].startswith("-"):
        if argv[at] in ("-m", "-c", "-"):
            return None
        at += 2 if argv[at] in ("-X", "-W") else 1
    return argv[at] if at < len(argv) else None  # a script, a folder or a zip with __main__.py: what Python runs
