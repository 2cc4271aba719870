"""Invocation -> the exact ncu argv, its copy-pasteable shell form, and the plan as data. Pure."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from ncucampaign.plan.expand import Invocation, Plan
from ncucampaign.spec.model import option_value
from ncucampaign.spec.ncu_catalog import OPTION_SPECS, OptionSpec

REPORT_SUFFIX = ".ncu-rep"


def ncu_options(invocation: Invocation) -> list[str]:
    """The ncu options of an invocation, in OPTION_SPECS order, without -f/-o and the application."""
    options = invocation.options
    argv: list[str] = []
    for spec in OPTION_SPECS:
        value = option_value(options, spec.key)
        if value is not None:
            argv.extend(_render(spec, value))
    argv.extend(options.extra_args or ())
    return argv


def _render(spec: OptionSpec, value: Any) -> list[str]:
    if spec.form == "value":
        return [spec.flag, str(value)]
    if spec.form == "repeat":
        return [part for item in value for part in (spec.flag, str(item))]
    if spec.form == "join":
        return [spec.flag, ",".join(str(item) for item in value)] if value else []
    if spec.form == "onoff":
        return [spec.flag, "on" if value else "off"]
    if spec.form == "yes":
        return [spec.flag, "yes"] if value else []
    return [spec.flag] if value else []  # switch


def report_stem(report_dir: Path, invocation: Invocation) -> Path:
    """ncu appends .ncu-rep to the -o name; pass the name without it."""
    return report_dir / invocation.name


def escape_macros(path: str) -> str:
    """ncu expands %h %p %q{} %i in -o; a literal '%' is written '%%' (valid in the path part too)."""
    return path.replace("%", "%%")


def ncu_argv(invocation: Invocation, ncu: str, report_dir: Path) -> list[str]:
    return [
        ncu,
        *ncu_options(invocation),
        "-f",
        "-o",
        escape_macros(str(report_stem(report_dir, invocation))),
        *invocation.app_argv,
    ]


def shell_command(argv: list[str], env: tuple[tuple[str, str], ...] = (), cwd: Path | None = None) -> str:
    """One line a POSIX shell runs exactly as ncucampaign would: `cd DIR && VAR=v ncu ...`."""
    words = [f"{key}={shlex.quote(value)}" for key, value in env]
    line = " ".join([*words, shlex.join(argv)])
    return f"cd {shlex.quote(str(cwd))} && {line}" if cwd is not None else line


def plan_json(plan: Plan, argvs: dict[str, list[str]] | None = None) -> dict[str, object]:
    """The plan as data (for `plan --format json` and plan.json in the run directory)."""
    invocations = []
    for inv in plan.invocations:
        entry: dict[str, object] = {
            "name": inv.name,
            "target": inv.target,
            "matrix": dict(inv.matrix),
            "env": dict(inv.env),
            "cwd": str(inv.cwd),
            "app_argv": list(inv.app_argv),
            "timeout_s": inv.timeout,
            "retries": inv.retries,
            "expected_results": inv.expected_results,
        }
        if argvs is not None:
            entry["argv"] = argvs[inv.name]
            entry["shell_command"] = shell_command(argvs[inv.name], inv.env, inv.cwd)
        invocations.append(entry)
    return {"campaign": plan.campaign, "source": str(plan.source), "ncu": plan.ncu, "invocations": invocations}
