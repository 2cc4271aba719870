"""A command as the command line registers it (cli.py): its name and help, the arguments it adds to its parser, and
the function that runs it. A command module exports one `COMMAND` (or `COMMANDS`, one per batch backend: task.py);
cli adds the parser and dispatches, so a command module never touches argparse's subparsers. Standard library only:
cli imports it before any command."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str | None = None  # the usage line's prose, where the help alone does not show how it is called
