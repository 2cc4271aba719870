"""`ncucampaign plan FILE`: print the ncu commands a run would execute."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ncucampaign.commands.common import add_ncu_option, load_plan, ncu_choice, print_warnings, runs_root
from ncucampaign.errors import EXIT_OK, plural
from ncucampaign.plan.argv import ncu_argv, plan_json, shell_command


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("plan", help="print the ncu commands a run would execute")
    parser.add_argument("file", metavar="FILE")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these targets (or expanded names)")
    add_ncu_option(parser)
    parser.add_argument(
        "--out", metavar="DIR", help="root of run directories, as for run (default: runs_dir: or runs/)"
    )
    parser.add_argument(
        "--report-dir", metavar="DIR", help="where -o points (default: <runs root>/<campaign>/plan/reports)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    loaded, plan = load_plan(args.file, ncu_choice(args), args.only)
    print_warnings(loaded, plan, None, sys.stderr)
    report_dir = (
        Path(args.report_dir).absolute()
        if args.report_dir
        else runs_root(args.out, loaded) / plan.campaign / "plan" / "reports"
    )
    argvs = {inv.name: ncu_argv(inv, plan.ncu, report_dir) for inv in plan.invocations}
    if args.format == "json":
        print(json.dumps(plan_json(plan, argvs), indent=2))
        return EXIT_OK
    count = len(plan.invocations)
    print(f"# ncucampaign plan: {plan.campaign} ({args.file}): {plural(count, 'ncu invocation')}")
    print(f"mkdir -p {shell_command([str(report_dir)])}")
    for position, inv in enumerate(plan.invocations, 1):
        print(f"# [{position}/{count}] {inv.name}")
        print(shell_command(argvs[inv.name], inv.env, inv.cwd))
    return EXIT_OK
