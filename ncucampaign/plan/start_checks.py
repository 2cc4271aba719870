"""Why an application would not start where it runs, seen before any run (NCU013): its folder missing or a file,
its program not on PATH, a folder or a file without its exec bit, its script missing, `python -m` of a module the
interpreter does not find. Pure: what the machine holds is asked of a Machine the command line hands in."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

from ncucampaign.plan.command import is_python, script_of

Kind = Literal["missing", "folder", "file", "program"]  # "program": a file with its exec bit


class Machine(Protocol):
    """What the checks ask of the machine that will run the application."""

    def kind(self, path: Path) -> Kind: ...

    def on_path(self, name: str, search: str | None) -> bool:
        """Whether a program of that name is on `search` (a PATH; None: the process's own)."""
        ...

    def has_module(self, python: str, module: str, cwd: Path) -> bool:
        """Whether `python -m module` finds the module, started in `cwd`."""
        ...


def why_cannot_start(
    argv: tuple[str, ...], cwd: Path, machine: Machine, search: str | None, cwd_given: bool
) -> tuple[Literal["cwd", "command"], str] | None:
    """Where (its folder or its command) and why the application would not start; None when nothing says so.
    `cwd_given`: the folder is the campaign's application.cwd (else the campaign file's own, which exists)."""
    if cwd_given and (found := machine.kind(cwd)) != "folder":
        what = "no such folder" if found == "missing" else "a file, not a folder"
        return "cwd", f"{cwd}: {what}; the application cannot start there"
    if not argv or argv[0] == "/bin/sh":  # shell: true: the shell says what it cannot run
        return None
    program = argv[0]
    if "/" not in program and not machine.on_path(program, search):
        return "command", f"{program}: no such program on PATH; the application cannot start"
    script = script_of(argv)
    if script is not None:
        found = machine.kind(Path(cwd, script))
        if found == "missing":
            return "command", (
                f"{script}: no such file in {cwd} (application.cwd, else the campaign file's folder); the "
                "application cannot start there"
            )
        if found == "folder":
            return "command", f"{script}: a folder in {cwd}, not a file; the application cannot start"
        if found == "file" and script == program:  # a script the interpreter reads needs no exec bit
            return "command", f"{script}: not executable (chmod +x {script}); the application cannot start"
    module = _module_of(argv)
    if module is not None and not machine.has_module(program, module, cwd):
        return "command", (
            f"{program} -m {module}: {program} here finds no module {module!r} (started in {cwd}); the application "
            "cannot start on this machine"
        )
    return None


def _module_of(argv: tuple[str, ...]) -> str | None:
    """The module of `python -m module ...` (after the interpreter's own options)."""
    if not is_python(argv[0]):
        return None
    at = 1
    while at < len(argv) and argv[at].startswith("-") and argv[at] != "-m":
        at += 2 if argv[at] in ("-X", "-W") else 1
    return argv[at + 1] if at + 1 < len(argv) and argv[at] == "-m" else None
