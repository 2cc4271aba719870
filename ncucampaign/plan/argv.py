"""Invocation -> the exact ncu argv, its copy-pasteable shell form, and the plan as data. Pure."""

from __future__ import annotations

import functools
import os
import re
import shlex
from pathlib import Path
from typing import Any

from ncucampaign.plan.expand import Invocation, Plan
from ncucampaign.spec.keys import field_name
from ncucampaign.spec.model import TargetOptions
from ncucampaign.spec.ncu_catalog import OPTION_SPECS, OptionSpec, option_flags

# Each option with the field that holds it: an invocation's values are looked up in its fields at once (10,000
# invocations took 1.6 million calls through the key's name, a third of `plan`'s own time).
_SPECS = tuple((spec, field_name(spec.key)) for spec in OPTION_SPECS)
_PLACES = {field: (place, field, spec) for place, (spec, field) in enumerate(_SPECS)}


def _given(options: TargetOptions) -> list[tuple[OptionSpec, Any]]:
    """The options set, in OPTION_SPECS order, with their values. Only a field set can hold a value (every field of
    TargetOptions defaults to None: tests/plan/test_argv_order.py holds it), and an invocation sets about 10 of 51."""
    values = options.__dict__
    places = sorted(_PLACES[field] for field in options.model_fields_set if field in _PLACES)
    return [(spec, value) for _, field, spec in places if (value := values[field]) is not None]


def ncu_options(invocation: Invocation) -> list[str]:
    """The ncu options of an invocation, in OPTION_SPECS order, without -f/-o and the application."""
    argv: list[str] = []
    for spec, value in _given(invocation.options):
        argv.extend(render_option(spec, value))
    argv.extend(invocation.options.extra_args or ())
    return argv


def ncu_flags(invocation: Invocation) -> list[str]:
    """The long names of every ncu option the invocation passes (its keys' and its extra_args')."""
    flags = [spec.flag for spec, value in _given(invocation.options) if render_option(spec, value)]
    return [*flags, *option_flags(invocation.options.extra_args or ())]


def collects_sections(options: TargetOptions) -> bool:
    """Whether ncu collects sections for it, and so runs its rules: not where it asks for metrics alone (extra_args
    cannot name --metrics, --section or --set: they have keys)."""
    return not options.metrics or bool(options.sections) or options.section_set is not None


def render_option(spec: OptionSpec, value: Any) -> list[str]:
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
    if spec.form == "onoff_path":  # off, on (ncu's own search), or on with this file
        if isinstance(value, str):
            return [spec.flag, "on", f"{spec.flag}-path", value]
        return [spec.flag, "on" if value else "off"]
    return [spec.flag] if value else []  # switch


def escape_macros(path: str) -> str:
    """ncu expands %h %p %q{} %i in -o; a literal '%' is written '%%' (valid in the path part too)."""
    return path.replace("%", "%%")


def _report_text(report_dir: Path, file: str) -> str:
    """The report's whole name, suffix included, as text: ncu writes `-o NAME.ncu-rep` as exactly that (measured on
    2025.3.1; docs/ncu-behaviour.md, "Versions"), and each version gets its own default suffix (`.ncu-repz` from
    2026.3), so that the name never depends on what a version appends. A Path for each of 10,000 invocations was a
    sixth of `plan`'s argvs."""
    folder = str(report_dir)
    return file if folder == "." else os.path.join(folder, file)


def ncu_argv(invocation: Invocation, ncu: str, report_dir: Path, suffix: str) -> list[str]:
    return [
        ncu,
        *ncu_options(invocation),
        "-f",
        "-o",
        escape_macros(_report_text(report_dir, f"{invocation.name}{suffix}")),
        *invocation.app_argv,
    ]


def shell_command(argv: list[str], env: tuple[tuple[str, str], ...] = (), cwd: Path | None = None) -> str:
    """One line a POSIX shell runs exactly as ncucampaign would: `cd DIR && VAR=v ncu ...`."""
    words = [f"{key}={quote(value)}" for key, value in env]
    line = " ".join([*words, *(quote(word) for word in argv)])
    return f"cd {quote(str(cwd))} && {line}" if cwd is not None else line


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@functools.lru_cache(maxsize=4096)  # a plan's words repeat (flags, sections, the command): 290,000 at 10,000 targets
def quote(word: str) -> str:
    """shlex.quote, except that a word with control characters is written $'...' with escapes (bash,
    zsh and POSIX.1-2024 shells read it), so that printing a command never sends them to the terminal."""
    if not _CONTROL.search(word):
        return shlex.quote(word)
    escaped = word.replace("\\", "\\\\").replace("'", "\\'")
    return "$'" + _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", escaped) + "'"


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
