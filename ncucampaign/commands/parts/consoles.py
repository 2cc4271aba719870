"""rich's consoles for the commands that print tables and live progress; apart from common.py, so that validate and
plan, which print plain lines, do not import rich at every start."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console

PIPED_WIDTH = 10_000  # piped to a file or CI log: never squeeze or wrap (trailing padding is stripped)


def out_console(stderr: bool = False) -> Console:
    """rich for stdout (or stderr): on a terminal, its width; piped, no wrapping (rich's own default
    wrapped prose at 80 columns)."""
    if (sys.stderr if stderr else sys.stdout).isatty():
        return Console(highlight=False, stderr=stderr)
    return PipedConsole(highlight=False, width=PIPED_WIDTH, stderr=stderr)


class PipedConsole(Console):
    """Output to a file or a pipe: nothing wrapped or squeezed (a line is as long as it needs), and no
    trailing padding."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        with self.capture() as captured:
            super().print(*objects, **kwargs)
        lines = captured.get().splitlines()
        self.file.write("".join(line.rstrip() + "\n" for line in lines))
        self.file.flush()
