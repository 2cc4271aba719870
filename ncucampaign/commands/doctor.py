"""`ncucampaign doctor [FILE]`: whether this machine can run a campaign, each check with its fix.
Exit 0 when every check passes (warnings included), 1 when something will fail."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from rich.table import Table

from ncucampaign.commands.parts.command import Command
from ncucampaign.commands.parts.common import add_ncu_option, ncu_choice, runs_root
from ncucampaign.commands.parts.consoles import out_console
from ncucampaign.errors import EXIT_OK, EXIT_TARGETS_FAILED
from ncucampaign.escaping import console_text
from ncucampaign.execute.doctor import machine_checks, ncu_check
from ncucampaign.execute.doctor_check import Check
from ncucampaign.results.reading.report_reader import reader_check
from ncucampaign.spec.loader import load_campaign

STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", metavar="FILE", help="a campaign: its ncu and its run directories")
    add_ncu_option(parser)
    parser.add_argument("--out", metavar="DIR", help="the run directories' root to check (as run's --out)")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    ncu, root = ncu_choice(args), Path(args.out).absolute() if args.out else Path("runs").absolute()
    if args.file:
        loaded = load_campaign(args.file)
        ncu = ncu or loaded.campaign.ncu
        root = runs_root(args.out, loaded)
    found, path, version = ncu_check(ncu or "ncu")
    checks = [found, reader_check(path, version), *machine_checks(path, root, Path.cwd(), os.environ)]
    failed = [c.name for c in checks if c.state == "fail"]
    warned, skipped = [c.name for c in checks if c.state == "warn"], [c.name for c in checks if c.state == "skip"]
    others = "".join(
        f"; {len(names)} {what}: {', '.join(names)}"
        for names, what in ((warned, "warn"), (skipped, "skipped"))
        if names
    )
    verdict = (
        f"doctor: {len(failed)} of {len(checks)} checks fail: {', '.join(failed)}{others}"
        if failed
        else f"doctor: no check fails ({len(checks)}){others}"
        if others
        else f"doctor: every check passes ({len(checks)})"
    )
    if args.format == "json":
        print(json.dumps({"checks": [vars(c) for c in checks], "passed": not failed, "line": verdict}, indent=2))
    else:
        console = out_console()
        console.print(table(checks))
        console.print(verdict, highlight=False, markup=False)
    return EXIT_TARGETS_FAILED if failed else EXIT_OK


def table(checks: list[Check]) -> Table:
    shown = Table(box=None, pad_edge=False, show_header=True)
    for column in ("check", "", "what it found"):
        shown.add_column(column, overflow="fold")
    for check in checks:
        fix = f"\nfix: {console_text(check.fix)}" if check.fix and check.state in ("fail", "warn") else ""
        shown.add_row(check.name, f"[{STYLE[check.state]}]{check.state}[/]", console_text(check.detail) + fix)
    return shown


COMMAND = Command(
    "doctor", "check that this machine can run a campaign: ncu, its reader, GPUs, counters, disk", add_arguments, run
)
