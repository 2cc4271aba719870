"""`ncucampaign validate FILE...`: check campaign files; print problems with file:line."""

from __future__ import annotations

import argparse
import sys

from ncucampaign.commands.parts.command import Command
from ncucampaign.commands.parts.common import (
    add_ncu_option,
    installed_listing,
    load_plan,
    many_values,
    ncu_choice,
    partial_warnings,
    print_warnings,
    refused_by,
)
from ncucampaign.errors import EXIT_OK, EXIT_USAGE, CampaignError, NcuCampaignError, plural
from ncucampaign.plan.share.estimate import LARGE, estimate, estimate_line
from ncucampaign.plan.share.groups import share_plan


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--strict", action="store_true", help="treat warnings as errors (exit 2), for CI")
    add_ncu_option(parser, "ncu to ask for its sections and sets (default: ncu on PATH)")


@many_values()
def run(args: argparse.Namespace) -> int:
    failed = 0
    ncu = installed_listing(ncu_choice(args))
    for file in args.files:
        try:
            loaded, plan = load_plan(file, None, None)
        except CampaignError as exc:  # its problems, then what the lint finds in its valid targets, then the count
            failed += 1  # findings on stderr, as run's and plan's; each file's verdict on stdout (`> log`: verdicts)
            print("\n".join(exc.problem_lines()), file=sys.stderr)
            found = partial_warnings(exc, ncu, sys.stderr)
            refused = sum(warning.certain for warning in found)
            also = f", {plural(refused, 'error')} the installed ncu refuses" if refused else ""
            also += f", {plural(len(found) - refused, 'warning')}" if len(found) > refused else ""
            sys.stderr.flush()  # in order where both streams go to one file
            print(exc.count_line(also))
            continue
        except NcuCampaignError as exc:
            failed += 1
            print(f"ncucampaign: error: {exc}", file=sys.stderr)
            continue
        warnings = print_warnings(loaded, plan, ncu, sys.stderr)
        sys.stderr.flush()
        refused = sum(warning.certain for warning in warnings)
        warned = len(warnings) - refused
        targets = len({inv.target_index for inv in plan.invocations})
        summary = f"{plural(targets, 'target')}, {plural(len(plan.invocations), 'ncu invocation')}"
        if refused:
            summary += f", {plural(refused, 'error')} (the installed ncu refuses them)"
        if warned:
            summary += f", {plural(warned, 'warning')}"
        if refused or (warned and args.strict):
            failed += 1
            print(f"{file}: not ok ({summary}{'; --strict' if not refused else ''})")
        else:
            print(f"{file}: ok ({summary})")
        if len(plan.invocations) > LARGE:
            print(f"  {estimate_line(estimate(share_plan(plan.invocations, refused=refused_by(warnings))))}")
    return EXIT_USAGE if failed else EXIT_OK


COMMAND = Command("validate", "check campaign files; print problems with file:line", add_arguments, run)
