"""`ncucampaign plan FILE`: print the ncu commands a run would execute."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ncucampaign.backends.systems import BACKENDS
from ncucampaign.commands.parts.command import Command
from ncucampaign.commands.parts.common import (
    ONLY_HELP,
    add_ncu_option,
    file_from_only,
    installed_listing,
    load_plan,
    many_values,
    ncu_choice,
    print_warnings,
    runs_root,
)
from ncucampaign.commands.running.request import add_backend_arguments, backend_request
from ncucampaign.errors import EXIT_OK, UsageError
from ncucampaign.plan.argv import ncu_argv, plan_json, shell_command
from ncucampaign.plan.share.groups import share_plan
from ncucampaign.plan.share.text import group_data, plan_text
from ncucampaign.plan.share.union import TIMING_LAUNCHES, timing_invocation
from ncucampaign.plan.units import units_in_plan_order
from ncucampaign.spec.ncu_catalog import report_suffix


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", nargs="?")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--only", nargs="+", metavar="NAME", help=ONLY_HELP)
    add_ncu_option(parser)
    parser.add_argument(
        "--out", metavar="DIR", help="root of run directories, as for run (default: runs_dir: or runs/)"
    )
    parser.add_argument("--no-share", action="store_true", help="as run --no-share: every target runs alone")
    parser.add_argument("--samples", type=int, metavar="N", help="as run --samples")
    parser.add_argument(
        "--report-dir", metavar="DIR", help="where -o points (default: <runs root>/<campaign>/plan/reports)"
    )
    add_backend_arguments(parser, submits=False)


@many_values()
def run(args: argparse.Namespace) -> int:
    file_from_only(args)
    if args.file is None:
        raise UsageError("plan needs a campaign FILE")
    loaded, plan = load_plan(args.file, ncu_choice(args), args.only, samples=args.samples)
    installed = installed_listing(plan.ncu)
    print_warnings(loaded, plan, installed, sys.stderr)
    report_dir = (
        Path(args.report_dir).absolute()
        if args.report_dir
        else runs_root(args.out, loaded) / plan.campaign / "plan" / "reports"
    )
    suffix = report_suffix(installed)
    argvs = {inv.name: ncu_argv(inv, plan.ncu, report_dir, suffix) for inv in plan.invocations}
    shares = share_plan(plan.invocations, not args.no_share, installed)
    backend = backend_request(args)
    chosen = BACKENDS[backend.name]
    prepared = chosen.prepare(backend, loaded, plan, runs_root(args.out, loaded))
    submitted = chosen.plan_text(prepared, plan, units_in_plan_order(plan.invocations, shares), report_dir.parent)
    if submitted is not None:  # what a batch backend would submit, instead of the commands
        print(submitted, end="")
        return EXIT_OK
    if args.format == "json":
        data = plan_json(plan, argvs)
        data["shared_runs"] = [group_data(group, plan.ncu, report_dir, suffix) for group in shares.groups]
        data["alone"] = {inv.name: why for inv, why in shares.alone}
        print(json.dumps(data, indent=2))
        return EXIT_OK
    print("\n".join(plan_text(plan, argvs, shares, report_dir, args.file, suffix)))
    if loaded.campaign.weigh and plan.invocations:
        timing = timing_invocation(plan.invocations[0], TIMING_LAUNCHES)
        argv = ncu_argv(timing, plan.ncu, report_dir / "shared", suffix)
        print("# after the targets, the timing pass (weigh: true; cached per command, workload, ncu and GPU):")
        print(shell_command(argv, timing.env, timing.cwd))
    return EXIT_OK


COMMAND = Command("plan", "print the ncu commands a run would execute", add_arguments, run)
