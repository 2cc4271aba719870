"""Why an application would not start where it runs, seen before any run (NCU013): its folder missing or a file,
its program not on PATH, a folder or a file without its exec bit, its script missing, `python -m` of a module the
interpreter does not find. Pure: the checks name what they need to know (`questions`), the command line looks at
the machine (execute/process/machine.py) and hands the answers back in as `Facts`; a fact not looked at says
nothing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ncucampaign.plan.command import is_python, script_of

Kind = Literal["missing", "folder", "file", "program"]  # "program": a file with its exec bit


@dataclass(frozen=True)
class Start:
    """How one application is started: its argv in its folder, with the PATH it is given (None: the process's)."""

    argv: tuple[str, ...]
    cwd: Path
    search: str | None
    cwd_given: bool  # the folder is the campaign's application.cwd (else the campaign file's own, which exists)


@dataclass(frozen=True)
class Questions:
    """What the checks need to know of the machine: what each path is, whether a program is on a PATH, whether
    `python -m module` finds its module started in a folder."""

    kinds: frozenset[Path] = frozenset()
    programs: frozenset[tuple[str, str | None]] = frozenset()
    modules: frozenset[tuple[str, str, Path]] = frozenset()
    heads: frozenset[Path] = frozenset()  # programs named by a path: how they begin (#!, an ELF header)


@dataclass(frozen=True)
class Facts:
    """The machine's answers to Questions. `heads`: a program's first bytes; `interpreters`: whether each #! line's
    interpreter is a program there."""

    kinds: Mapping[Path, Kind] = field(default_factory=dict)
    programs: Mapping[tuple[str, str | None], bool] = field(default_factory=dict)
    modules: Mapping[tuple[str, str, Path], bool] = field(default_factory=dict)
    heads: Mapping[Path, bytes] = field(default_factory=dict)
    interpreters: Mapping[str, bool] = field(default_factory=dict)


ELF = b"\x7fELF"


def interpreter_of(head: bytes) -> str | None:
    """The program a `#!` line names (the kernel runs it with the script), or None without one."""
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    return words[0].decode(errors="replace") if words else ""


def questions(starts: Iterable[Start]) -> Questions:
    """Everything why_cannot_start may ask of these starts, each once (thousands of invocations share a command)."""
    kinds: set[Path] = set()
    programs: set[tuple[str, str | None]] = set()
    modules: set[tuple[str, str, Path]] = set()
    heads: set[Path] = set()
    for start in set(starts):
        if start.cwd_given:
            kinds.add(start.cwd)
        if not start.argv or start.argv[0] == "/bin/sh":
            continue
        if "/" not in start.argv[0]:
            programs.add((start.argv[0], start.search))
        if (script := script_of(start.argv)) is not None:
            kinds.add(Path(start.cwd, script))
            if script == start.argv[0]:
                heads.add(Path(start.cwd, script))
            elif is_python(start.argv[0]):
                kinds.add(Path(start.cwd, script, "__main__.py"))
        if (module := _module_of(start.argv)) is not None:
            modules.add((start.argv[0], module, start.cwd))
    return Questions(frozenset(kinds), frozenset(programs), frozenset(modules), frozenset(heads))


def why_cannot_start(start: Start, facts: Facts) -> tuple[Literal["cwd", "command"], str] | None:
    """Where (its folder or its command) and why the application would not start; None when nothing says so."""
    argv, cwd = start.argv, start.cwd
    if start.cwd_given and (folder := facts.kinds.get(cwd, "folder")) != "folder":
        what = "no such folder" if folder == "missing" else "a file, not a folder"
        return "cwd", f"{cwd}: {what}; the application cannot start there"
    if not argv or argv[0] == "/bin/sh":  # shell: true: the shell says what it cannot run
        return None
    program = argv[0]
    if "/" not in program and not facts.programs.get((program, start.search), True):
        return "command", f"{program}: no such program on PATH; the application cannot start"
    script = script_of(argv)
    if script is not None:
        found = facts.kinds.get(Path(cwd, script))
        if found == "missing":
            return "command", (
                f"{script}: no such file in {cwd} (application.cwd, else the campaign file's folder); the "
                "application cannot start there"
            )
        if found == "folder" and (script == program or facts.kinds.get(Path(cwd, script, "__main__.py")) == "missing"):
            if script == program:
                return "command", f"{script}: a folder in {cwd}, not a file; the application cannot start"
            return (
                "command",
                f"{script}: a folder in {cwd} without __main__.py, which {program} would run; the "
                "application cannot start",
            )
        if found == "file" and script == program:  # a script the interpreter reads needs no exec bit
            return "command", f"{script}: not executable (chmod +x {script}); the application cannot start"
        if found == "program" and script == program and (head := facts.heads.get(Path(cwd, script))) is not None:
            problem = _exec_problem(head, facts)
            if problem:
                return "command", f"{script}: {problem}; the application cannot start"
    module = _module_of(argv)
    if module is not None and not facts.modules.get((program, module, cwd), True):
        return "command", (
            f"{program} -m {module}: {program} here finds no module {module!r} (started in {cwd}); the application "
            "cannot start on this machine"
        )
    return None


def _exec_problem(head: bytes, facts: Facts) -> str | None:
    """Why the kernel would refuse to run a file with its exec bit: a #! line whose interpreter is not a program
    there ("bad interpreter"), or neither a #! line nor an ELF binary ("Exec format error": Python starts programs
    without the shell's fallback)."""
    interpreter = interpreter_of(head)
    if interpreter is not None:
        if not interpreter:
            return "its #! line names no interpreter"
        if not facts.interpreters.get(interpreter, True):
            return f"its #! line names {interpreter}, which is not a program here (bad interpreter)"
        return None
    if head and not head.startswith(ELF):
        return "neither a #! script nor an ELF program (Exec format error): start it with its interpreter"
    return None


def _module_of(argv: tuple[str, ...]) -> str | None:
    """The module of `python -m module ...` (after the interpreter's own options)."""
    if not is_python(argv[0]):
        return None
    at = 1
    while at < len(argv) and argv[at].startswith("-") and argv[at] != "-m":
        at += 2 if argv[at] in ("-X", "-W") else 1
    return argv[at + 1] if at + 1 < len(argv) and argv[at] == "-m" else None
