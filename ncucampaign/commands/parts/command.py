"""A command as the command line registers it (cli.py): its name and help, the arguments it adds to its parser, and
the function that runs it. A command module exports one `COMMAND` (or `COMMANDS`, one per batch backend: task.py);
cli adds the parser and dispatches, so a command module never touches argparse's subparsers. Standard library only
(and errors.py): cli imports it before any command. CommandParser checks every argument that names a path."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ncucampaign.errors import control_characters


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str | None = None  # the usage line's prose, where the help alone does not show how it is called


_PATH_METAVARS = ("DIR", "FILE", "PATH", "RUN", "REPORT")
_PATH_FLAGS = ("--ncu", "--out", "--output", "--html", "--to")


def path_text(value: str) -> str:
    """A path given on the command line holds no control character: a newline would start a line of its own in
    the scripts, comments and hints that name the path (the Slurm script runs its lines); as spec/values.py's
    PATH_PATTERN."""
    odd = control_characters(value)
    if odd:
        raise argparse.ArgumentTypeError(f"a path cannot hold control characters ({', '.join(map(repr, odd))})")
    return value


class CommandParser(argparse.ArgumentParser):
    """Every argument that names a path (its metavar or flag says so) is checked by path_text."""

    def add_argument(self, *names: Any, **options: Any) -> argparse.Action:
        metavar = str(options.get("metavar") or "")
        named = any(word in metavar for word in _PATH_METAVARS) or any(name in _PATH_FLAGS for name in names)
        if named and "type" not in options and options.get("action") in (None, "store", "append", "extend"):
            options["type"] = path_text
        return super().add_argument(*names, **options)
