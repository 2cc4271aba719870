"""This machine, as the start checks ask of it (plan/start_checks.py Questions, answered as Facts): what a path is,
whether a program is on PATH, whether an interpreter finds a module (asked of the interpreter itself, in the
application's folder)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from ncucampaign.execute.process.short import run_captured
from ncucampaign.plan.start_checks import Facts, Kind, Questions, interpreter_of

MODULE_CHECK_S = 20.0  # an interpreter's start and one import search
# Exit 0: found; 1: not found; anything else (no interpreter, a crash, a timeout): unknown, so not said.
_FIND = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 1)"


class ThisMachine:
    def answer(self, questions: Questions) -> Facts:
        heads = {path: head for path in questions.heads if (head := self.head(path)) is not None}
        interpreters = {name for head in heads.values() if (name := interpreter_of(head))}
        return Facts(
            {path: self.kind(path) for path in questions.kinds},
            {(name, search): self.on_path(name, search) for name, search in questions.programs},
            {(python, module, cwd): self.has_module(python, module, cwd) for python, module, cwd in questions.modules},
            heads,
            {name: self.runs(name) for name in interpreters},
        )

    def runs(self, interpreter: str) -> bool:
        """Whether a #! line's interpreter is a program here (a relative one is the kernel's to find: not said)."""
        return not os.path.isabs(interpreter) or (os.access(interpreter, os.X_OK) and not os.path.isdir(interpreter))

    def head(self, path: Path) -> bytes | None:
        """A program's first bytes (None: unreadable, or not a regular file: nothing said)."""
        try:
            with path.open("rb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    return None
                return handle.read(256)
        except (OSError, ValueError):
            return None

    def kind(self, path: Path) -> Kind:
        try:
            mode = path.stat().st_mode
        except (OSError, ValueError):  # missing, a link loop, a name no file system holds
            return "missing"
        if stat.S_ISDIR(mode):
            return "folder"
        return "program" if os.access(path, os.X_OK) else "file"

    def on_path(self, name: str, search: str | None) -> bool:
        return shutil.which(name, path=search) is not None

    def has_module(self, python: str, module: str, cwd: Path) -> bool:
        if module.startswith("-") or not cwd.is_dir():
            return True  # not a module name, or a folder said already: nothing more to say
        code, _ = run_captured([python, "-c", _FIND, module], MODULE_CHECK_S, cwd=cwd)
        return code != 1
