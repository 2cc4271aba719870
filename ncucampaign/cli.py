"""Command line: parse, dispatch, print. No logic of its own beyond choosing what to call."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from ncucampaign import __version__
from ncucampaign.argv import ncu_argv, shell_command
from ncucampaign.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CampaignError,
    NcuCampaignError,
    UsageError,
)
from ncucampaign.loader import LoadedCampaign, load_campaign
from ncucampaign.plan import Plan, build_plan
from ncucampaign.process import StopRequest
from ncucampaign.schema import campaign_schema, manifest_schema, render

DEFAULT_RUNS_DIR = "runs"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ncucampaign",
        description="Validate, plan and run Nsight Compute (ncu) profiling campaigns.",
        epilog="Exit codes: 0 ok, 1 some target failed, 2 usage or campaign error, 3 environment problem, "
        "130 interrupted, 70 internal error.",
    )
    parser.add_argument("--version", action="version", version=f"ncucampaign {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate = commands.add_parser("validate", help="check campaign files; print problems with file:line")
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.set_defaults(handler=cmd_validate)

    plan = commands.add_parser("plan", help="print the ncu commands a run would execute")
    plan.add_argument("file", metavar="FILE")
    plan.add_argument("--format", choices=("text", "json"), default="text")
    plan.add_argument("--only", nargs="+", metavar="NAME", help="only these targets (or expanded names)")
    plan.add_argument("--ncu", metavar="PATH", help="ncu executable (default: campaign 'ncu:', $NCUCAMPAIGN_NCU, ncu)")
    plan.add_argument("--report-dir", default="reports", metavar="DIR", help="where -o points (default: ./reports)")
    plan.set_defaults(handler=cmd_plan)

    run = commands.add_parser("run", help="run the campaign; reports and manifest go to a run directory")
    run.add_argument("file", metavar="FILE")
    run.add_argument("--only", nargs="+", metavar="NAME", help="only these targets (or expanded names)")
    run.add_argument("--out", metavar="DIR", help="root of run directories (default: campaign 'runs_dir:' or ./runs)")
    run.add_argument("--dry-run", action="store_true", help="print what would run; create nothing")
    run.add_argument("--ncu", metavar="PATH", help="ncu executable (default: campaign 'ncu:', $NCUCAMPAIGN_NCU, ncu)")
    run.add_argument("--show-output", action="store_true", help="show ncu's and the application's output live")
    run.set_defaults(handler=cmd_run)

    schema = commands.add_parser("schema", help="print the JSON Schema of campaign files (or of manifests)")
    schema.add_argument("--manifest", action="store_true", help="the schema of manifest.json instead")
    schema.set_defaults(handler=cmd_schema)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except CampaignError as exc:
        print(exc, file=sys.stderr)
        return exc.exit_code
    except NcuCampaignError as exc:
        print(f"ncucampaign: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("ncucampaign: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if os.environ.get("NCUCAMPAIGN_DEBUG"):
            raise
        print(
            f"ncucampaign: internal error (a bug, please report it): {type(exc).__name__}: {exc}\n"
            "Set NCUCAMPAIGN_DEBUG=1 to see the traceback.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _ncu_choice(args: argparse.Namespace) -> str | None:
    return args.ncu or os.environ.get("NCUCAMPAIGN_NCU") or None


def _load_plan(file: str, ncu: str | None, only: list[str] | None) -> tuple[LoadedCampaign, Plan]:
    loaded = load_campaign(file)
    plan = build_plan(loaded, ncu)
    if only:
        try:
            plan = plan.select(only)
        except KeyError as exc:
            name = exc.args[0]
            known = sorted({*plan.names(), *(inv.target for inv in plan.invocations)})
            hint = difflib.get_close_matches(name, known, n=1)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else f" (targets: {', '.join(known)})"
            raise UsageError(f"--only: no target named {name!r} in {file}{suggestion}") from None
    return loaded, plan


def cmd_validate(args: argparse.Namespace) -> int:
    failed = 0
    for file in args.files:
        try:
            _, plan = _load_plan(file, None, None)
        except NcuCampaignError as exc:
            failed += 1
            print(exc if isinstance(exc, CampaignError) else f"ncucampaign: error: {exc}", file=sys.stderr)
            continue
        targets = len({inv.target_index for inv in plan.invocations})
        print(f"{file}: ok ({targets} targets, {len(plan.invocations)} ncu invocations)")
    return EXIT_USAGE if failed else EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    from ncucampaign.runner import plan_json

    _, plan = _load_plan(args.file, _ncu_choice(args), args.only)
    report_dir = Path(args.report_dir).absolute()
    argvs = {inv.name: ncu_argv(inv, plan.ncu, report_dir) for inv in plan.invocations}
    if args.format == "json":
        print(json.dumps(plan_json(plan, argvs), indent=2))
        return EXIT_OK
    count = len(plan.invocations)
    print(f"# ncucampaign plan: {plan.campaign} ({args.file}): {count} ncu invocation{'s' if count != 1 else ''}")
    print(f"mkdir -p {shell_command([str(report_dir)])}")
    for position, inv in enumerate(plan.invocations, 1):
        print(f"# [{position}/{count}] {inv.name}")
        print(shell_command(argvs[inv.name], inv.env, inv.cwd))
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from ncucampaign.console import ConsoleReporter, final_table
    from ncucampaign.runner import CampaignRun, RunSettings, resolve_ncu, stop_on_signals

    loaded, plan = _load_plan(args.file, _ncu_choice(args), args.only)
    campaign = loaded.campaign
    if args.out:
        runs_root = Path(args.out)
    elif campaign.runs_dir:
        runs_root = loaded.base_dir / campaign.runs_dir
    else:
        runs_root = Path(DEFAULT_RUNS_DIR)
    if args.dry_run:
        report_dir = runs_root / plan.campaign / "<run-id>" / "reports"
        print(f"# dry run: {len(plan.invocations)} ncu invocations; nothing is created")
        for inv in plan.invocations:
            print(shell_command(ncu_argv(inv, plan.ncu, report_dir), inv.env, inv.cwd))
        return EXIT_OK
    settings = RunSettings(
        runs_root=runs_root,
        ncu_path=resolve_ncu(plan.ncu),
        show_output=args.show_output,
        command_line=tuple(sys.argv),
    )
    stop = StopRequest()
    # Piped to a file or CI log: do not squeeze the table into 80 columns.
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
    reporter = ConsoleReporter(console, live=False if args.show_output else None)
    with reporter, stop_on_signals(stop, reporter):
        result = CampaignRun(loaded, plan, settings, reporter).execute(stop)
    console.print(final_table(result.manifest, str(result.run.root)))
    console.print(f"manifest: {result.run.manifest}", highlight=False)
    return result.exit_code


def cmd_schema(args: argparse.Namespace) -> int:
    sys.stdout.write(render(manifest_schema() if args.manifest else campaign_schema()))
    return EXIT_OK
