"""`ncucampaign discover FILE [--scope NAME | --target NAME]` or `discover -- CMD ARGS...`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ncucampaign.commands.parts.command import Command
from ncucampaign.commands.parts.common import add_ncu_option, checked_ncu, load_plan, ncu_choice, runs_root
from ncucampaign.commands.parts.consoles import out_console
from ncucampaign.commands.parts.progress import ConsoleReporter
from ncucampaign.discover.analysis import Mode
from ncucampaign.discover.session import (
    Discovery,
    DiscoveryRequest,
    bare_command_campaign,
    discovery_plan,
    run_discovery,
)
from ncucampaign.discover.tables import kernel_table, suggested_targets_table
from ncucampaign.errors import EXIT_OK, EXIT_TARGETS_FAILED, UsageError
from ncucampaign.escaping import console_text
from ncucampaign.execute.prepare import RunSettings, resolve_ncu
from ncucampaign.execute.process.signals import StopRequest, stop_on_signals
from ncucampaign.execute.rundir.request import RunRequest
from ncucampaign.plan.expand import build_plan
from ncucampaign.results.reading.records import NcuReportReader


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", nargs="+", metavar="FILE | -- CMD", help="a campaign file, or a command after --")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--scope",
        metavar="NAME",
        help="only where this target looks (its NVTX, range, process, call-stack filters), any kernel",
    )
    where.add_argument(
        "--target",
        metavar="NAME",
        help="every launch this target's filters match, numbered as launch_skip counts, marking the ones it profiles",
    )
    parser.add_argument("--launch-limit", type=int, metavar="N", help="stop after N launches (default 300)")
    parser.add_argument("--top", type=int, default=5, metavar="K", help="suggest targets for the K costliest kernels")
    parser.add_argument(
        "--nth", type=int, metavar="N", help="suggestions pick the Nth matching launch (default: the middle one)"
    )
    parser.add_argument(
        "--out", metavar="DIR", help="root of run directories (default: runs_dir: or runs/ beside the campaign file)"
    )
    add_ncu_option(parser, "ncu executable")
    parser.add_argument("--show-output", action="store_true", help="show ncu's and the application's output live")


def run(args: argparse.Namespace) -> int:
    what = args.what
    if len(what) == 1 and what[0].endswith((".yaml", ".yml")) and Path(what[0]).is_file():
        loaded, plan = load_plan(what[0], ncu_choice(args), None)
    elif args.scope or args.target:
        raise UsageError("--scope and --target need a campaign file")
    else:
        loaded = bare_command_campaign(what, Path.cwd())
        plan = build_plan(loaded, ncu_choice(args))
    mode: Mode = "target" if args.target else "scope" if args.scope else "all"
    request = DiscoveryRequest(mode, args.target or args.scope, args.launch_limit, args.top, args.nth)
    if args.launch_limit is not None and args.launch_limit < 1:
        raise UsageError("--launch-limit must be at least 1")
    discovery_plan(loaded, plan, request)  # a name that is no target is said before ncu is looked for
    ncu_path = resolve_ncu(plan.ncu)
    settings = RunSettings(
        runs_root=runs_root(args.out, loaded),
        ncu_path=ncu_path,
        reader=NcuReportReader(ncu_path),
        request=RunRequest(show_output=args.show_output),
        command_line=tuple(sys.argv),
        installed=checked_ncu(ncu_path, plan),  # its reports are named with its own suffix
    )
    stop = StopRequest()
    console = out_console()
    reporter = ConsoleReporter(console, live=False if args.show_output else None)
    with stop_on_signals(stop, reporter.stopping):  # a late Ctrl-C only sets a flag, also while printing
        with reporter:
            found = run_discovery(loaded, plan, request, settings, reporter, stop)
        if not isinstance(found, Discovery):
            record = found.manifest.targets[0]
            console.print(f"discovery pass: {record.status.value}: {console_text(record.message)}")
            return found.exit_code if found.exit_code != EXIT_OK else EXIT_TARGETS_FAILED
        print_discovery(console, found)
    return EXIT_OK


def print_discovery(console: Console, found: Discovery) -> None:
    if found.profiled is not None and found.launches:
        console.print(suggested_targets_table(found.base, found.launches, found.profiled))
    else:
        console.print(kernel_table(found.kernels, len(found.launches), found.limit))
        console.print("\nSuggested targets (paste under targets:):\n")
        console.print(escape(found.targets_yaml), highlight=False, soft_wrap=True)
    if found.truncated:
        console.print(f"note: the pass stopped at its launch limit ({found.limit}); raise --launch-limit to see more.")
    console.print(
        f"run directory: {found.result.run.root} (kernels.json, targets.yaml, reports/, logs/)", highlight=False
    )


COMMAND = Command(
    "discover",
    "one cheap ncu pass: which kernels run, how long, under which NVTX ranges; target YAML to paste",
    add_arguments,
    run,
    description="ncucampaign discover FILE [--scope NAME | --target NAME], or ncucampaign discover -- CMD ARGS...",
)
