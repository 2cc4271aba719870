"""`ncucampaign ab FILE --a NAME=VALUE --b NAME=VALUE`: the campaign under a baseline and a candidate environment,
runs interleaved (A B, B A, ...) so that a drift of the machine falls on both, ending with compare's verdicts and
a CI exit code; without --a and --b an A/A calibration (every SLOWER, FASTER or CHANGED is false). Each run is an
ordinary run directory, `<runs>/<campaign>/ab-<time>/A|B/<campaign>/<run-id>` (docs/results.md, "compare")."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import sys
import time
from pathlib import Path

import yaml
from rich import box
from rich.markup import escape
from rich.table import Table

from ncucampaign.commands import run as run_command
from ncucampaign.commands.compare import add_report_options, print_verdicts, write_reports
from ncucampaign.commands.parts.command import Command
from ncucampaign.commands.parts.common import ONLY_HELP, add_ncu_option, load_plan, ncu_choice, runs_root, shown_few
from ncucampaign.commands.parts.consoles import out_console
from ncucampaign.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TARGETS_FAILED, UsageError, plural, printable
from ncucampaign.execute.rundir.request import RunRequest
from ncucampaign.execute.rundir.store import LATEST
from ncucampaign.plan.expand import Plan
from ncucampaign.results.gate.calibration import CalibrationRow, calibration
from ncucampaign.results.gate.compare import compare_runs
from ncucampaign.results.gate.verdicts import ALPHA, SIZE_THRESHOLD, THRESHOLD, pooled
from ncucampaign.results.reading.runs import load_run
from ncucampaign.results.tables.tables import comparison_json
from ncucampaign.spec.values import ENV_NAME_PATTERN
from ncucampaign.spec.yaml_lines import MAX_STRING as MAX_VALUE_BYTES

MAX_PAIRS = 100


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="the campaign")
    for side, what in (("a", "baseline"), ("b", "candidate")):
        parser.add_argument(
            f"--{side}",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help=f"an environment variable of the {what}'s application (repeatable)",
        )
    parser.add_argument(
        "--a-file",
        metavar="FILE",
        help="the baseline's campaign file (default FILE): the same campaign in another checkout, whose application "
        "A then runs (a pull request's base)",
    )
    parser.add_argument("--pairs", type=int, default=3, help="A/B pairs of runs, interleaved (default 3)")
    parser.add_argument("--samples", type=int, metavar="N", help="as run's: samples per target in each run")
    parser.add_argument("--only", nargs="+", metavar="NAME", help=ONLY_HELP)
    parser.add_argument("--out", metavar="DIR", help="root of run directories (as run's --out)")
    add_ncu_option(parser)
    parser.add_argument("--threshold", type=float, default=THRESHOLD * 100, metavar="PERCENT", help="as compare's")
    parser.add_argument(
        "--size-threshold", type=float, default=SIZE_THRESHOLD * 100, metavar="PERCENT", help="as compare's"
    )
    parser.add_argument("--strict", action="store_true", help="AMBIGUOUS and CHANGED verdicts fail too")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--verbose", action="store_true", help="each run's progress and tables too (on stderr)")
    add_report_options(parser)


def run(args: argparse.Namespace) -> int:
    sides = {"A": environment(args.a, "--a"), "B": environment(args.b, "--b")}
    files = {"A": Path(args.a_file or args.file), "B": Path(args.file)}
    calibrating = not args.a and not args.b and args.a_file is None
    if sides["A"] == sides["B"] and same_file(files["A"], files["B"]) and not calibrating:
        raise UsageError(
            "A and B are the same: give what differs with --a NAME=VALUE, --b NAME=VALUE or --a-file (another file)"
        )
    if args.a_file is not None and not files["A"].is_file():
        raise UsageError(f"--a-file {args.a_file}: no such campaign file (the baseline needs the campaign too)")
    if not 1 <= args.pairs <= MAX_PAIRS:
        raise UsageError(f"--pairs must be between 1 and {MAX_PAIRS}")
    folder, plan, only, apart = prepared(args, sides, files)
    runs: dict[str, list[Path]] = {"A": [], "B": []}
    for pair in range(args.pairs):
        for side in ("A", "B") if pair % 2 == 0 else ("B", "A"):
            started = time.monotonic()
            code = one_run(args, folder / f"{side}.yaml", folder / side, only)
            if code == EXIT_INTERRUPTED:
                return code
            runs[side].append((folder / side / plan.campaign / LATEST).resolve())
            told = run_line(load_run(runs[side][-1]).manifest.counts(), time.monotonic() - started, runs[side][-1])
            print(f"ncucampaign ab: pair {pair + 1}/{args.pairs}, {side}: {told}", file=sys.stderr)
    a, b = (pooled([load_run(path).manifest for path in runs[side]]) for side in ("A", "B"))
    threshold = args.threshold / 100
    comparison = compare_runs(a, b, threshold, (), (threshold, ALPHA, args.size_threshold / 100))
    not_compared = apart_notes(apart)
    comparison = dataclasses.replace(comparison, notes=(*not_compared, *comparison.notes))
    more = {"folder": str(folder), "runs": {side: [str(path) for path in paths] for side, paths in runs.items()}}
    write_reports(args, comparison, "ncucampaign ab (A/A calibration)" if calibrating else "ncucampaign ab", more)
    if calibrating:
        return print_calibration(calibration(a, b, comparison, args.size_threshold / 100), args, folder)
    if args.format == "json":
        sys.stdout.write(comparison_json(comparison, args.strict, more))
    else:
        out_console().print(f"A/B: {args.pairs} pairs of runs in {folder}")
        for note in not_compared:
            out_console().print(note, highlight=False, markup=False)
        print_verdicts(comparison, True, args.strict)
    return EXIT_TARGETS_FAILED if comparison.failed(args.strict) else EXIT_OK


def same_file(one: Path, other: Path) -> bool:
    return one.absolute().resolve() == other.absolute().resolve()


def prepared(
    args: argparse.Namespace, sides: dict[str, dict[str, str]], files: dict[str, Path]
) -> tuple[Path, Plan, list[str] | None, dict[str, list[str]]]:
    """Each side's campaign as it will run (its env added, its working directory absolute), checked before anything
    runs and written into a new ab folder as A.yaml and B.yaml: the folder, B's plan (whose name both keep), the
    targets both run (--only's, or where --a-file's campaign holds other targets, those both hold) and the others."""
    loaded, plan = load_plan(args.file, ncu_choice(args), args.only, samples=args.samples)  # problems up front
    only: list[str] | None = args.only
    apart: dict[str, list[str]] = {"A": [], "B": []}
    if not same_file(files["A"], files["B"]):  # A's, as A's file says them; a change may add or remove targets
        _, a_plan = load_plan(str(files["A"]), ncu_choice(args), args.only, samples=args.samples)
        only, apart = in_both(a_plan.names(), plan.names(), only, files)
    texts = {side: derived_text(files[side], env, plan.campaign) for side, env in sides.items()}
    for side, text in texts.items():
        _, derived = load_plan(str(files[side]), ncu_choice(args), only, text=text, samples=args.samples)
        check_side(derived, sides[side], f"--{side.lower()}")
    folder = new_folder(runs_root(args.out, loaded) / plan.campaign)
    for side, text in texts.items():
        (folder / f"{side}.yaml").write_text(text, encoding="utf-8")
    return folder, plan, only, apart


def in_both(
    a_names: list[str], b_names: list[str], only: list[str] | None, files: dict[str, Path]
) -> tuple[list[str] | None, dict[str, list[str]]]:
    """The targets both campaigns hold (None: the same ones, `only` stands) and those only one holds: a change that
    adds or removes a target is no gate failure, and neither side profiles what the other cannot compare."""
    known_a, known_b = set(a_names), set(b_names)
    apart = {"A": [n for n in a_names if n not in known_b], "B": [n for n in b_names if n not in known_a]}
    if not apart["A"] and not apart["B"]:
        return only, apart
    common = [name for name in b_names if name in known_a]
    if not common:
        raise UsageError(f"{files['A']} and {files['B']} hold no target of one name: there is nothing to compare")
    return common, apart


def apart_notes(apart: dict[str, list[str]]) -> list[str]:
    """What was not compared, for the console, the JSON and the job's page."""
    whose = {"A": "only the baseline's campaign (--a-file) holds", "B": "only the candidate's campaign holds"}
    return [f"not compared: {shown_few(names)}: {whose[side]}" for side, names in apart.items() if names]


def run_line(counts: dict[str, int], seconds: float, where: Path) -> str:
    """One line for one run: its targets' statuses, its seconds, its directory."""
    statuses = ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda x: -x[1]))
    return f"{statuses or 'no target'} in {seconds:.0f} s ({where})"


def print_calibration(rows: list[CalibrationRow], args: argparse.Namespace, folder: Path) -> int:
    """The calibration's table and its one line; exit 1 when a verdict was a false one."""
    false = [row for row in rows if row.false]
    line = f"calibration: {plural(len(false), 'false verdict')} of {len(rows)} (expected 0)"
    if args.format == "json":
        sys.stdout.write(json.dumps({"rows": [dataclasses.asdict(r) for r in rows], "false": len(false)}) + "\n")
        return EXIT_TARGETS_FAILED if false else EXIT_OK
    console = out_console()
    console.print(f"A/A: {args.pairs} pairs of runs of one environment in {folder}")
    table = Table(box=box.SIMPLE_HEAD)
    for header in ("target", "samples A/B", "spread", "verdict", "smallest shift it detects"):
        table.add_column(header)
    for row in rows:
        spread = f"{row.spread:.1%}" if row.spread is not None else "-"
        table.add_row(
            escape(printable(row.target)), f"{row.samples[0]}/{row.samples[1]}", spread, row.verdict, row.detectable
        )
    console.print(table)
    console.print(line, style="bold red" if false else None)
    return EXIT_TARGETS_FAILED if false else EXIT_OK


def environment(assignments: list[str], flag: str) -> dict[str, str]:
    """NAME=VALUE words as a campaign's env would take them (the same names and values are refused)."""
    env = {}
    for assignment in assignments:
        name, equals, value = assignment.partition("=")
        if not equals or not re.fullmatch(ENV_NAME_PATTERN, name):
            raise UsageError(
                f"{flag} {assignment!r}: expected NAME=VALUE (an environment variable: letters, digits, _)"
            )
        if "\0" in value or len(value.encode()) > MAX_VALUE_BYTES:
            raise UsageError(f"{flag} {name}: a value holds no NUL and at most {MAX_VALUE_BYTES // 1024} KiB")
        env[name] = value
    return env


def check_side(derived: Plan, env: dict[str, str], flag: str) -> None:
    """Refuse a side whose variables the campaign's own env sets again (in defaults or a target, where
    it wins over the application's): that side would run with the campaign's value, A like B."""
    for name, value in env.items():
        overridden = [inv.name for inv in derived.invocations if dict(inv.env).get(name) != value]
        if overridden:
            shown = ", ".join(overridden[:3]) + (", ..." if len(overridden) > 3 else "")
            raise UsageError(
                f"{flag} {name}=...: the campaign's own env sets {name} for {shown} (in defaults or a target), "
                f"which wins over ab's: both sides would run with it. Remove {name} there, or vary another variable"
            )


def derived_text(original: Path, env: dict[str, str], name: str) -> str:
    """The campaign with `env` added to its application's environment, its name kept (a file of another name would
    rename it), its working directory absolute (relative ones start at the campaign file, which this is not beside)."""
    data = yaml.safe_load(original.read_text(encoding="utf-8"))
    data["name"] = name
    application = data["application"]
    application["env"] = {**(application.get("env") or {}), **env}
    application["cwd"] = str((original.parent.absolute() / (application.get("cwd") or ".")).resolve())
    return yaml.safe_dump(data, sort_keys=False)


def new_folder(parent: Path) -> Path:
    """ab-<time>, or ab-<time>-2, ... when another ab started in the same second: created, never shared."""
    parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("ab-%Y%m%d-%H%M%S")
    for number in range(1, 1000):
        folder = parent / (stamp if number == 1 else f"{stamp}-{number}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
    raise UsageError(f"{parent}: a thousand ab runs started in the same second")


def one_run(args: argparse.Namespace, campaign: Path, out: Path, only: list[str] | None) -> int:
    """One ordinary `run` of `campaign` into `out`: the same request `run` builds, so the same checks."""
    request = RunRequest(
        file=str(campaign), out=str(out), ncu_flag=args.ncu, only=tuple(only or ()), samples=args.samples
    )
    # The runs' own progress and tables are diagnostics here: stderr with --verbose (stdout holds only
    # the verdicts, and stays one JSON document with --format json), else nothing: a line a run says it.
    with open(os.devnull, "w") as quiet, contextlib.ExitStack() as redirected:
        redirected.enter_context(contextlib.redirect_stdout(sys.stderr if args.verbose else quiet))
        if not args.verbose:
            redirected.enter_context(contextlib.redirect_stderr(quiet))
        return run_command.run_request(request)


COMMAND = Command("ab", "profile the campaign under a baseline (A) and a candidate (B); verdicts", add_arguments, run)
