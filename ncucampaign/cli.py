"""Command line: parse, dispatch, print. No logic of its own beyond choosing what to call."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.markup import escape

from ncucampaign import __version__
from ncucampaign.argv import ncu_argv, shell_command
from ncucampaign.classify import ConsoleSummary, Status
from ncucampaign.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TARGETS_FAILED,
    EXIT_USAGE,
    CampaignError,
    NcuCampaignError,
    UsageError,
)
from ncucampaign.lint import InstalledNcu, lint_plan
from ncucampaign.loader import LoadedCampaign, load_campaign
from ncucampaign.manifest import ResultRecord, TargetRecord
from ncucampaign.plan import Plan, build_plan
from ncucampaign.process import StopRequest
from ncucampaign.provenance import installed_ncu
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
    validate.add_argument("--strict", action="store_true", help="treat warnings as errors (exit 2), for CI")
    validate.add_argument("--ncu", metavar="PATH", help="ncu to ask for its sections and sets (default: ncu on PATH)")
    validate.set_defaults(handler=cmd_validate)

    plan = commands.add_parser("plan", help="print the ncu commands a run would execute")
    plan.add_argument("file", metavar="FILE")
    plan.add_argument("--format", choices=("text", "json"), default="text")
    plan.add_argument("--only", nargs="+", metavar="NAME", help="only these targets (or expanded names)")
    plan.add_argument("--ncu", metavar="PATH", help="ncu executable (default: campaign 'ncu:', $NCUCAMPAIGN_NCU, ncu)")
    plan.add_argument("--report-dir", default="reports", metavar="DIR", help="where -o points (default: ./reports)")
    plan.set_defaults(handler=cmd_plan)

    run = commands.add_parser("run", help="run the campaign; reports and manifest go to a run directory")
    run.add_argument("file", metavar="FILE", nargs="?", help="the campaign (with --resume: default, the one it ran)")
    run.add_argument("--only", nargs="+", metavar="NAME", help="only these targets (or expanded names)")
    run.add_argument("--out", metavar="DIR", help="root of run directories (default: campaign 'runs_dir:' or ./runs)")
    run.add_argument("--dry-run", action="store_true", help="print what would run; create nothing")
    run.add_argument("--ncu", metavar="PATH", help="ncu executable (default: campaign 'ncu:', $NCUCAMPAIGN_NCU, ncu)")
    run.add_argument("--show-output", action="store_true", help="show ncu's and the application's output live")
    run.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        metavar="RUN_DIR",
        help="complete a run: skip targets that are ok and unchanged (default: the latest run)",
    )
    run.add_argument(
        "--rerun-failed",
        action="store_true",
        help="with --resume (implied): run only the targets that failed or are incomplete",
    )
    run.add_argument("--gpus", metavar="LIST", help="run targets side by side, one per GPU: 0,1,... or all")
    run.add_argument(
        "--jobs-per-gpu",
        type=int,
        default=1,
        metavar="N",
        help="ncu processes sharing one GPU (default 1: sharing can disturb the numbers)",
    )
    run.set_defaults(handler=cmd_run)

    discover = commands.add_parser(
        "discover",
        help="one cheap ncu pass: which kernels run, how long, under which NVTX ranges; target YAML to paste",
        description="ncucampaign discover FILE [--scope NAME | --target NAME], or ncucampaign discover -- CMD ARGS...",
    )
    discover.add_argument("what", nargs="+", metavar="FILE | -- CMD", help="a campaign file, or a command after --")
    where = discover.add_mutually_exclusive_group()
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
    discover.add_argument("--launch-limit", type=int, metavar="N", help="stop after N launches (default 300)")
    discover.add_argument("--top", type=int, default=5, metavar="K", help="suggest targets for the K costliest kernels")
    discover.add_argument(
        "--nth", type=int, metavar="N", help="suggestions pick the Nth matching launch (default: the middle one)"
    )
    discover.add_argument("--out", metavar="DIR", help="root of run directories (default: ./runs)")
    discover.add_argument("--ncu", metavar="PATH", help="ncu executable")
    discover.add_argument("--show-output", action="store_true", help="show ncu's and the application's output live")
    discover.set_defaults(handler=cmd_discover)

    summarize = commands.add_parser("summarize", help="what each target measured (from the manifest or reports)")
    summarize.add_argument("runs", nargs="+", metavar="RUN_DIR|REPORT", help="run directories or .ncu-rep files")
    summarize.add_argument(
        "--format",
        choices=("text", "csv", "json"),
        default="text",
        help="csv/json: one row per result and metric, for pandas or spreadsheets",
    )
    summarize.set_defaults(handler=cmd_summarize)

    compare = commands.add_parser("compare", help="what changed between two runs of a campaign")
    compare.add_argument("run_a", metavar="RUN_A")
    compare.add_argument("run_b", metavar="RUN_B")
    compare.add_argument(
        "--threshold",
        type=float,
        default=10.0,
        metavar="PERCENT",
        help="flag changes beyond this relative change (default 10)",
    )
    compare.add_argument(
        "--metric", action="append", default=[], metavar="NAME", help="compare this ncu metric too (repeatable)"
    )
    compare.add_argument("--all", action="store_true", help="show every metric, not only flagged changes")
    compare.add_argument("--format", choices=("text", "json"), default="text")
    compare.add_argument(
        "--fail-on-regression", action="store_true", help="exit 1 when a duration grew beyond the threshold (for CI)"
    )
    compare.set_defaults(handler=cmd_compare)

    report = commands.add_parser("report", help="write one self-contained HTML page for a run")
    report.add_argument("run", metavar="RUN_DIR")
    report.add_argument("-o", "--output", metavar="FILE", help="default: RUN_DIR/report.html")
    report.set_defaults(handler=cmd_report)

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


def _installed(ncu: str | None) -> InstalledNcu | None:
    found = shutil.which(ncu or "ncu")
    return installed_ncu(found) if found else None


def _print_warnings(loaded: LoadedCampaign, plan: Plan, installed: InstalledNcu | None, stream: TextIO) -> int:
    warnings = lint_plan(loaded, plan, installed)
    for warning in warnings:
        print(warning.render(str(loaded.path)), file=stream)
    return len(warnings)


def cmd_validate(args: argparse.Namespace) -> int:
    failed = 0
    installed = _installed(_ncu_choice(args))
    for file in args.files:
        try:
            loaded, plan = _load_plan(file, None, None)
        except NcuCampaignError as exc:
            failed += 1
            print(exc if isinstance(exc, CampaignError) else f"ncucampaign: error: {exc}", file=sys.stderr)
            continue
        warned = _print_warnings(loaded, plan, installed, sys.stdout)
        targets = len({inv.target_index for inv in plan.invocations})
        summary = f"{targets} targets, {len(plan.invocations)} ncu invocations"
        if warned:
            summary += f", {warned} warning{'s' if warned != 1 else ''}"
        if warned and args.strict:
            failed += 1
            print(f"{file}: not ok ({summary}; --strict)")
        else:
            print(f"{file}: ok ({summary})")
    return EXIT_USAGE if failed else EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    from ncucampaign.runner import plan_json

    loaded, plan = _load_plan(args.file, _ncu_choice(args), args.only)
    _print_warnings(loaded, plan, None, sys.stderr)
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

    resume_dir = _resume_dir(args)
    file = args.file or (_resumed_campaign_file(resume_dir) if resume_dir else None)
    if file is None:
        raise UsageError("run needs a campaign FILE (or --resume RUN_DIR)")
    loaded, plan = _load_plan(file, _ncu_choice(args), args.only)
    runs_root = _runs_root(args, loaded)
    if args.dry_run:
        report_dir = runs_root / plan.campaign / "<run-id>" / "reports"
        print(f"# dry run: {len(plan.invocations)} ncu invocations; nothing is created")
        for inv in plan.invocations:
            print(shell_command(ncu_argv(inv, plan.ncu, report_dir), inv.env, inv.cwd))
        return EXIT_OK
    if args.jobs_per_gpu < 1:
        raise UsageError("--jobs-per-gpu must be at least 1")
    if args.jobs_per_gpu > 1 and not args.gpus:
        raise UsageError("--jobs-per-gpu needs --gpus")
    ncu_path = resolve_ncu(plan.ncu)
    _print_warnings(loaded, plan, installed_ncu(ncu_path), sys.stderr)
    if args.jobs_per_gpu > 1:
        print(
            f"ncucampaign: warning: {args.jobs_per_gpu} ncu processes per GPU; profiling at the same time on one "
            "GPU was seen to raise durations by a few percent",
            file=sys.stderr,
        )
    if args.resume == "latest":
        resume_dir = runs_root / plan.campaign / "latest"
    settings = RunSettings(
        runs_root=runs_root,
        ncu_path=ncu_path,
        show_output=args.show_output,
        command_line=tuple(sys.argv),
        gpus=_gpu_list(args.gpus),
        jobs_per_gpu=args.jobs_per_gpu,
        resume=resume_dir,
        rerun_failed=args.rerun_failed,
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


def _resume_dir(args: argparse.Namespace) -> Path | None:
    """--resume RUN_DIR (or --rerun-failed with it); 'latest' is resolved once the campaign is known."""
    if args.rerun_failed and args.resume is None:
        args.resume = "latest"
    if args.resume is None or args.resume == "latest":
        return None
    return Path(args.resume)


def _resumed_campaign_file(run_dir: Path) -> str:
    from ncucampaign.results import load_run

    source = load_run(run_dir).manifest.campaign.source
    if not source or not Path(source).is_file():
        raise UsageError(f"{run_dir}: its campaign file {source!r} is gone; name the campaign FILE to resume with")
    return source


def _gpu_list(text: str | None) -> tuple[str, ...] | None:
    from ncucampaign.provenance import gpu_info
    from ncucampaign.schedule import parse_gpus

    if text is None:
        return None
    available = None
    if text.strip() == "all":
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        available = (
            [g.strip() for g in visible.split(",") if g.strip()]
            if visible
            else [str(g.index) for g in gpu_info() or []]
        )
    try:
        return parse_gpus(text, available)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _runs_root(args: argparse.Namespace, loaded: LoadedCampaign) -> Path:
    if args.out:
        return Path(args.out)
    if loaded.campaign.runs_dir:
        return loaded.base_dir / loaded.campaign.runs_dir
    return Path(DEFAULT_RUNS_DIR)


def cmd_discover(args: argparse.Namespace) -> int:
    from ncucampaign.console import ConsoleReporter
    from ncucampaign.discover_run import DiscoveryRequest, bare_command_campaign, run_discovery
    from ncucampaign.runner import RunSettings, resolve_ncu, stop_on_signals

    what = args.what
    if len(what) == 1 and what[0].endswith((".yaml", ".yml")) and Path(what[0]).is_file():
        loaded, plan = _load_plan(what[0], _ncu_choice(args), None)
    elif args.scope or args.target:
        raise UsageError("--scope and --target need a campaign file")
    else:
        loaded = bare_command_campaign(what, Path.cwd())
        plan = build_plan(loaded, _ncu_choice(args))
    mode = "target" if args.target else "scope" if args.scope else "all"
    request = DiscoveryRequest(mode, args.target or args.scope, args.launch_limit, args.top, args.nth)
    if args.launch_limit is not None and args.launch_limit < 1:
        raise UsageError("--launch-limit must be at least 1")
    settings = RunSettings(
        runs_root=_runs_root(args, loaded),
        ncu_path=resolve_ncu(plan.ncu),
        show_output=args.show_output,
        command_line=tuple(sys.argv),
    )
    stop = StopRequest()
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
    reporter = ConsoleReporter(console, live=False if args.show_output else None)
    with reporter, stop_on_signals(stop, reporter):
        return run_discovery(loaded, plan, request, settings, reporter, stop, console)


def _out_console() -> Console:
    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def cmd_summarize(args: argparse.Namespace) -> int:
    from ncucampaign.measure import result_records
    from ncucampaign.results import load_run, run_rows, tidy_rows
    from ncucampaign.views import target_table, tidy_csv, tidy_json

    console = _out_console()
    rows: list[dict[str, object]] = []
    for given in args.runs:
        path = Path(given)
        if path.suffix == ".ncu-rep":
            if not path.is_file():
                raise UsageError(f"{given}: no such report")
            results = result_records(path, (), ConsoleSummary(), "ncu")
            if not results:
                raise UsageError(f"{given}: cannot read the report (pip install 'ncucampaign[reports]')")
            rows += tidy_rows("", path.stem, "", results)
            if args.format == "text":
                console.print(target_table(path.name, _record_of(path.stem, results)))
            continue
        run = load_run(path)
        rows += run_rows(run)
        if args.format == "text":
            for record in run.manifest.targets:
                console.print(target_table(run.manifest.run_id, record))
    if args.format == "csv":
        sys.stdout.write(tidy_csv(rows))
    elif args.format == "json":
        sys.stdout.write(tidy_json(rows))
    return EXIT_OK


def _record_of(name: str, results: list[ResultRecord]) -> TargetRecord:
    return TargetRecord(
        name=name,
        target=name,
        argv=[],
        shell_command="",
        env={},
        cwd="",
        timeout_s=0,
        retries=0,
        expected_results=None,
        status=Status.OK,
        results=results,
        log="",
    )


def cmd_compare(args: argparse.Namespace) -> int:
    from ncucampaign.results import compare_runs, load_run
    from ncucampaign.views import comparison_json, comparison_table

    if args.threshold < 0:
        raise UsageError("--threshold must not be negative")
    run_a, run_b = load_run(args.run_a), load_run(args.run_b)
    threshold = args.threshold / 100
    comparison = compare_runs(run_a.manifest, run_b.manifest, threshold, args.metric)
    if args.format == "json":
        sys.stdout.write(comparison_json(comparison))
    else:
        console = _out_console()
        console.print(f"A: {run_a.root}\nB: {run_b.root}")
        for note in comparison.notes:
            console.print(escape(note), style="yellow" if note.startswith("warning") else None)
        for name in comparison.only_in_a:
            console.print(f"only in A: {escape(name)}")
        for name in comparison.only_in_b:
            console.print(f"only in B: {escape(name)}")
        console.print(comparison_table(comparison, threshold, args.all))
        flagged = sum(1 for change in comparison.changes if change.flagged)
        console.print(
            f"{len(comparison.changes)} values compared, {flagged} flagged, {len(comparison.regressions)} regressions"
        )
    return EXIT_TARGETS_FAILED if args.fail_on_regression and comparison.regressions else EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from ncucampaign.html_report import write_report
    from ncucampaign.results import load_run

    path = write_report(load_run(args.run), Path(args.output) if args.output else None)
    print(path)
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    sys.stdout.write(render(manifest_schema() if args.manifest else campaign_schema()))
    return EXIT_OK
