"""What the commands share: loading a campaign into a plan, its warnings, where runs go, consoles."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import gc
import hashlib
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO

from ncucampaign.errors import CampaignError, EnvironmentProblem, UsageError
from ncucampaign.execute.process.installed import installed_ncu
from ncucampaign.execute.process.machine import ThisMachine
from ncucampaign.execute.rundir.guards import collector_paused
from ncucampaign.plan.argv import ncu_flags
from ncucampaign.plan.exec_limits import exec_size_problems
from ncucampaign.plan.expand import Plan, build_plan, expand, plan_problems
from ncucampaign.plan.lint import LintWarning, lint_plan, start_questions
from ncucampaign.results.reading.report_reader import reader_too_old, wheel_version
from ncucampaign.spec.loader import LoadedCampaign, load_campaign, parse_campaign
from ncucampaign.spec.model import MAX_SAMPLES
from ncucampaign.spec.ncu_catalog import InstalledNcu, missing_options

DEFAULT_RUNS_DIR = "runs"


@contextlib.contextmanager
def many_values() -> Iterator[None]:
    """While a command builds many values that hold no cycle (a campaign and its plan, whole runs read back): the
    cyclic collector paused, and what was built frozen before it runs again. Two runs of 20,000 targets are about
    four million containers; collections while they were built took two thirds of summarize's time, and the first
    after a pause walked them all. validate + plan of 10,000 targets: 1.9 of their 4 s (bench.py plan)."""
    with collector_paused():  # which enables it again after the freeze, where it was enabled
        try:
            yield
        finally:
            gc.freeze()


def add_ncu_option(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    parser.add_argument(
        "--ncu", metavar="PATH", help=help or "ncu executable (default: campaign 'ncu:', $NCUCAMPAIGN_NCU, ncu)"
    )


def ncu_choice(args: argparse.Namespace) -> str | None:
    return chosen_ncu(args.ncu)


def chosen_ncu(flag: str | None) -> str | None:
    """The ncu asked for: --ncu, else $NCUCAMPAIGN_NCU (None: the campaign's `ncu:`, else ncu)."""
    return flag or os.environ.get("NCUCAMPAIGN_NCU") or None


def load_plan(
    file: str, ncu: str | None, only: list[str] | None, text: str | None = None, samples: int | None = None
) -> tuple[LoadedCampaign, Plan]:
    """The validated campaign and its plan; one CampaignError with every problem of the file.
    `text`: the campaign's text when it comes from elsewhere (a run's copy); `file` then only
    names it and is where its relative paths start. `samples`: run --samples, over every target's."""
    with many_values():  # run's too: what planning builds lives as long as the run
        return _load_plan(file, ncu, only, text, samples)


def _load_plan(
    file: str, ncu: str | None, only: list[str] | None, text: str | None, samples: int | None
) -> tuple[LoadedCampaign, Plan]:
    try:
        sealed = hashlib.sha256(text.encode()).hexdigest() if text is not None else ""  # a run's copy: its seal kept
        loaded = load_campaign(file) if text is None else parse_campaign(text, Path(file), sealed)
    except CampaignError as exc:
        if exc.partial is None:
            raise
        raise CampaignError(exc.file, [*exc.problems, *plan_problems(exc.partial)], exc.partial) from None
    if samples is not None:
        if not 1 <= samples <= MAX_SAMPLES:
            raise UsageError(f"--samples must be between 1 and {MAX_SAMPLES}")
        targets = tuple(t.model_copy(update={"samples": samples}) for t in loaded.campaign.targets)
        loaded = dataclasses.replace(loaded, campaign=loaded.campaign.model_copy(update={"targets": targets}))
    plan = build_plan(loaded, ncu)
    limit, inherited = exec_limit()
    too_large = exec_size_problems(plan.invocations, limit, inherited) if limit else []
    if too_large:
        raise loaded.error(too_large)
    if only:
        try:
            plan = plan.select(only)
        except KeyError as exc:
            name = exc.args[0]
            known = sorted({*plan.names(), *(inv.target for inv in plan.invocations)})
            hint = difflib.get_close_matches(name, known, n=1)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else f" (targets: {shown_few(known)})"
            what = "matches" if any(c in name for c in "*?[") else "is named"
            raise UsageError(f"--only: no target {what} {name!r} in {file}{suggestion}") from None
    return loaded, plan


ONLY_HELP = "only these targets (or expanded names); shell-style patterns too, quoted: 'rms_*' 'gemm_?'"


def shown_few(names: Sequence[str], most: int = 8) -> str:
    """A list cut for one line of an error: 1,000 target names made one of 11,876 characters."""
    return ", ".join(names[:most]) + (f", ... ({len(names)} in all)" if len(names) > most else "")


def exec_limit() -> tuple[int, int]:
    """ARG_MAX (0 where the system does not say) and the bytes of the environment a run starts from."""
    try:
        limit = os.sysconf("SC_ARG_MAX")
    except (ValueError, OSError):
        return 0, 0
    inherited = sum(len(name.encode()) + len(value.encode()) + 2 for name, value in os.environ.items())
    return max(limit, 0), inherited


def partial_warnings(exc: CampaignError, installed: InstalledNcu | None, stream: TextIO) -> list[LintWarning]:
    """The lint warnings of the targets that are valid in a campaign that is not (NCU009's "ncu will
    refuse it", say): reported with its problems, in the same pass."""
    if exc.partial is None:
        return []
    invocations, _ = expand(exc.partial)
    plan = Plan(campaign=exc.partial.name, source=exc.partial.path, ncu="ncu", invocations=tuple(invocations))
    return print_warnings(exc.partial, plan, installed, stream)


def print_warnings(
    loaded: LoadedCampaign, plan: Plan, installed: InstalledNcu | None, stream: TextIO
) -> list[LintWarning]:
    """Print the lint's findings and hand them back. Those the installed ncu is sure to refuse print as
    errors: validate fails on them; plan prints them and run runs the rest (the target ends usage_error
    at once, never retried: a campaign's one broken target never stops the others)."""
    warnings = lint_plan(loaded, plan, installed, ThisMachine().answer(start_questions(loaded, plan)))
    for warning in warnings:
        print(warning.render(str(loaded.path)), file=stream)
    return warnings


def refused_by(warnings: Sequence[LintWarning]) -> dict[str, str]:
    """The invocations validate refuses (its errors: what ncu is sure to refuse), with validate's words: run closes
    them unstarted and runs the rest (docs/campaigns.md, "Validation")."""
    return {
        name: f"validate refuses it ({warning.code}: {warning.message})"
        for warning in warnings
        if warning.certain
        for name in warning.invocations
    }


def runs_root(out: str | None, loaded: LoadedCampaign) -> Path:
    """Where run directories go, by one rule for every command (docs/running.md, "Where output goes"):
    --out DIR (relative to the current directory, like any path given on the command line), else the
    campaign's runs_dir: (relative to the campaign file), else runs/ beside the campaign file. Absolute,
    so that what `plan` and `--dry-run` print is where `run` writes, wherever they are run from."""
    if out:
        return Path(out).absolute()
    return (loaded.base_dir / (loaded.campaign.runs_dir or DEFAULT_RUNS_DIR)).absolute()


def checked_ncu(ncu_path: str, plan: Plan) -> InstalledNcu | None:
    """What the installed ncu says of itself, once it is known to run the plan: its report reader opens
    its reports (an older ncu-report cannot: every report would be unreadable), and it has every
    option the campaign passes (else ncu refuses every such target). Said before anything runs."""
    installed = installed_ncu(ncu_path)
    too_old = reader_too_old(installed.version if installed else None, wheel_version())
    if too_old:
        raise EnvironmentProblem(too_old)
    if installed is None:
        return None
    missing: dict[str, list[str]] = {}
    for inv in plan.invocations:
        for problem in missing_options(ncu_flags(inv), installed.facts, installed.options):
            missing.setdefault(problem, []).append(inv.name)
    if missing:
        lines = [f"  {problem} (targets: {', '.join(names)})" for problem, names in missing.items()]
        raise EnvironmentProblem(
            f"the campaign passes options the installed ncu ({ncu_path}) does not have:\n" + "\n".join(lines)
        )
    return installed


def installed_listing(ncu: str | None) -> InstalledNcu | None:
    """What the ncu a run would use lists (cached per binary), so that `plan` keeps out of shared runs
    what `run` keeps out; None where that ncu is not installed (a laptop): then it cannot know."""
    found = shutil.which(ncu or "ncu")
    return installed_ncu(str(Path(found).absolute())) if found else None


def file_from_only(args: argparse.Namespace) -> None:
    """`--only a b FILE`: argparse hands FILE to --only (one or more names); a campaign file there is
    the FILE, wherever the user put it."""
    only = args.only
    if args.file is None and only and (Path(only[-1]).suffix in (".yaml", ".yml") or Path(only[-1]).is_file()):
        args.file = only.pop()
        if not only:
            raise UsageError("--only needs at least one target name")
