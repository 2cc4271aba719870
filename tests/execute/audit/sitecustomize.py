"""Put on PYTHONPATH by tests/execute/hostile_run_dirs.py: every Python process of a hostile reading (the command's,
its report reader workers) reports to HOSTILE_AUDIT_LOG each file it opens under HOSTILE_OUTSIDE (or /etc/passwd)
and each program it starts that is not one of HOSTILE_PROGRAMS. Nothing without HOSTILE_AUDIT_LOG."""

from __future__ import annotations

import os
import sys

LOG = os.environ.get("HOSTILE_AUDIT_LOG")
OUTSIDE = os.environ.get("HOSTILE_OUTSIDE", "\0")
PROGRAMS = set(filter(None, os.environ.get("HOSTILE_PROGRAMS", "").split(os.pathsep)))
PROGRAM_EVENTS = ("subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system", "os.fork")
_inside = [False]


def _note(line: str) -> None:
    _inside[0] = True
    try:
        assert LOG is not None
        with open(LOG, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {line}\n")
    finally:
        _inside[0] = False


def _resolved(path: object) -> str | None:
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str):
        return None
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def hook(event: str, args: tuple[object, ...]) -> None:
    if _inside[0] or LOG is None:
        return
    if event == "open":
        where = _resolved(args[0])
        if where is not None and (where.startswith(OUTSIDE) or where == "/etc/passwd"):
            _note(f"open {where}")
    elif event in PROGRAM_EVENTS:
        if event == "os.system":
            _note(f"program {args[0]!r}")
            return
        program = args[0]
        if event == "subprocess.Popen" and isinstance(args[1], list | tuple) and args[1]:
            program = args[1][0]
        if program is None:  # os.fork: the child runs Python (our own)
            return
        where = _resolved(program)
        if where is not None and where not in PROGRAMS and os.path.basename(where) not in PROGRAMS:
            _note(f"program {where}")


if LOG is not None:
    sys.addaudithook(hook)
