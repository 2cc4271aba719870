"""The command table, and errors mapped to exit codes; each command is `ncucampaign.commands.<name>`, which exports
its COMMAND (commands/parts/command.py: name, help, arguments, run) and is registered and dispatched here. Only the
standard library here (and that record): `_entry` imports commands under a Ctrl-C guard, `main` exits 130 on one."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from ncucampaign import __version__
from ncucampaign.commands.parts.command import Command, CommandParser
from ncucampaign.errors import (
    EXIT_ENVIRONMENT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_TARGETS_FAILED,
    CampaignError,
    NcuCampaignError,
    printable,
)

TASKS = "running.task_commands"  # each batch backend's `<backend>-task`: no command of the flat list

COMMANDS = (
    "validate",
    "plan",
    "run",
    "collect",
    "discover",
    "summarize",
    "compare",
    "reference",
    "history",
    "ab",
    "findings",
    "report",
    "export",
    "schema",
    "doctor",
    TASKS,
)
TASK_SUFFIX = "-task"
RUNS = "ncucampaign_runs"  # where a parsed command line keeps the function that runs it (no option's name)


class _CommandsFormatter(argparse.HelpFormatter):
    """argparse measures the commands' names one indent short (their help then starts on a line of its
    own for `summarize` and `reference`): measured here at the indent they are printed at."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if action.help is not argparse.SUPPRESS and isinstance(action, argparse._SubParsersAction):
            for command in action._get_subactions():
                width = len(self._format_action_invocation(command)) + self._current_indent + 2 * self._indent_increment
                self._action_max_length = max(self._action_max_length, width)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with `argv` that names a command, that command's alone (the
    others' modules are not imported: start-up pays only for the command that runs)."""
    parser = CommandParser(
        prog="ncucampaign",
        formatter_class=_CommandsFormatter,
        description="Validate, plan and run Nsight Compute (ncu) profiling campaigns.",
        epilog="Exit codes: 0 ok, 1 some target failed, 2 usage or campaign error, 3 environment problem, "
        "4 not comparable (compare --reference), 130 interrupted, 70 internal error.",
    )
    parser.add_argument("--version", action="version", version=f"ncucampaign {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in commands_for(argv):
        for command in registered(command_module(name)):
            each = commands.add_parser(command.name, help=command.help, description=command.description)
            command.add_arguments(each)
            each.set_defaults(**{RUNS: command.run})
    return parser


def registered(module: ModuleType) -> tuple[Command, ...]:
    """What a command module registers: its COMMAND, or its COMMANDS (one per batch backend)."""
    commands: tuple[Command, ...] = getattr(module, "COMMANDS", None) or (module.COMMAND,)
    return commands


def commands_for(argv: Sequence[str] | None) -> tuple[str, ...]:
    """The commands a parser needs for `argv`: the one it names first, or all (for --help, a
    mistyped command, or none)."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["--version"]:  # answered before any command is looked at (a CI step's check; 0.5 s of imports)
        return ()
    first = next((word for word in words if not word.startswith("-")), None)
    if first is not None and first.endswith(TASK_SUFFIX) and words[0] == first:
        return (TASKS,)
    return (first,) if first in COMMANDS and words[0] == first else COMMANDS


def command_module(name: str) -> ModuleType:
    return importlib.import_module(f"ncucampaign.commands.{name.replace('-', '_')}")


def load_commands(argv: Sequence[str] | None = None) -> None:
    """Import the commands `argv` needs (commands_for), and so their dependencies: the slow part of start-up."""
    for name in commands_for(argv):
        command_module(name)


def main(argv: Sequence[str] | None = None) -> int:
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:  # started with it closed (`>&-`): written to nowhere, as a closed pipe
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 (open for the process's life)
    try:
        os.getcwd()
    except FileNotFoundError:
        print("ncucampaign: error: the current directory no longer exists", file=sys.stderr)
        return EXIT_ENVIRONMENT
    command = None
    try:
        args = build_parser(argv).parse_args(argv)
        command = args.command
        code = int(getattr(args, RUNS)(args))
        sys.stdout.flush()  # a closed pipe or a full disk shows here, not at interpreter exit
        return code
    except CampaignError as exc:
        print(exc.render("; nothing was run." if command in ("run", "discover") else ""), file=sys.stderr)
        return exc.exit_code
    except NcuCampaignError as exc:
        print(f"ncucampaign: error: {printable(str(exc), keep_newlines=True)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("ncucampaign: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `ncucampaign plan ... | head -1`: the reader has all it wanted
        _silence_stdout()
        return EXIT_TARGETS_FAILED
    except OSError as exc:  # one the commands did not explain: the machine's, not the campaign's
        if exc.filename is None:  # files are written through the store, which names them: this is stdout
            _silence_stdout()
            what = "cannot write the output"
        else:
            what = printable(str(exc.filename))
        print(f"ncucampaign: error: {what}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    except Exception as exc:
        return _internal_error(exc)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's own flush at exit does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _internal_error(exc: BaseException) -> int:
    if os.environ.get("NCUCAMPAIGN_DEBUG"):
        raise exc
    print(
        f"ncucampaign: internal error (a bug, please report it): {type(exc).__name__}: {printable(str(exc))}\n"
        "Set NCUCAMPAIGN_DEBUG=1 to see the traceback.",
        file=sys.stderr,
    )
    return EXIT_INTERNAL
