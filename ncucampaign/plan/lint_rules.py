"""The lint rules: functions yielding (key path, message), in `RULES` with a stable code. A new one: the function,
a `Rule`, and a campaign in tests/plan/test_lint_rules.py that triggers it and one that does not."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ncucampaign.plan.collectives import can_match_collective, excluding_collectives, launcher_of
from ncucampaign.plan.start_checks import Facts, Start, why_cannot_start
from ncucampaign.spec.model import TargetOptions
from ncucampaign.spec.ncu_catalog import InstalledNcu, missing_options
from ncucampaign.spec.ncu_grammar import TOO_DEEP, compile_regex, is_start_end_name, push_pop_names, split_regex

KeyPath = tuple[str | int, ...]
Found = Iterable[tuple[KeyPath, str]]
EXPENSIVE_SETS = {"full", "detailed", "roofline"}
MANY_SECTIONS = 4


@dataclass(frozen=True)
class Context:
    """What a rule sees: one invocation's resolved options, or (expansion rules) all of a target's."""

    here: KeyPath  # ('targets', index)
    options: TargetOptions
    installed: InstalledNcu | None = None
    expansion: tuple[TargetOptions, ...] = ()
    matrix: Mapping[str, Any] | None = None
    command: tuple[str, ...] = ()  # the application command line
    flags: tuple[str, ...] = ()  # the long names of the ncu options it passes (plan/argv.py ncu_flags)
    command_at: KeyPath = ("application", "command")  # where that command line is written
    cwd: Path | None = None  # the folder the application runs in
    cwd_at: KeyPath | None = None  # where that folder is written (None: the campaign file's own folder)
    search: str | None = None  # the PATH the application's environment sets (None: the one it inherits)
    facts: Facts | None = None  # what the command line found on the machine: the rules stay pure


@dataclass(frozen=True)
class Rule:
    title: str
    check: Callable[[Context], Found]
    per_target: bool = False  # True: runs once per target entry over all its expansions
    # True: ncu is sure to refuse what it finds (the installed ncu says so): an error, not a warning
    # (validate exited 0 on "ncu will refuse it")
    certain: bool = False


def _nvtx_expressions(c: Context) -> Iterable[tuple[KeyPath, str]]:
    for key in ("nvtx_include", "nvtx_exclude"):
        for position, expression in enumerate(getattr(c.options, key) or ()):
            yield (*c.here, key, position), expression


def trailing_slash(c: Context) -> Found:
    for path, expression in _nvtx_expressions(c):
        if is_start_end_name(expression):
            yield (
                path,
                f"{expression!r} has no trailing '/', so ncu matches it against start/end ranges only "
                f"(nvtxRangeStart); PyTorch's range_push and ncu_range() make push/pop ranges: write "
                f"'{expression}/'. Observed: ncu then profiles nothing.",
            )


def glob_in_name(c: Context) -> Found:
    for path, expression in _nvtx_expressions(c):
        if split_regex(expression)[0]:
            continue
        glob = next((n for n in push_pop_names(expression) if "*" in n and n != "*" and "\\*" not in n), None)
        if glob:
            yield (
                path,
                f"'*' in {glob!r} is not a glob in ncu's NVTX grammar: it matches a range literally named "
                f"{glob!r}. Use 'regex:{glob.replace('*', '.*')}/' for a pattern, or 'A/*/B' for ranges in between.",
            )


def comma_in_nvtx_regex(c: Context) -> Found:
    for path, expression in _nvtx_expressions(c):
        if split_regex(expression)[0] and "," in expression:
            yield (
                path,
                f"{expression!r}: ncu reads ',' in an NVTX expression as the start/end AND delimiter, "
                "so a regex quantifier such as {1,3} is split; rewrite the regex without commas.",
            )


def range_filter_without_ranges(c: Context) -> Found:
    o = c.options
    if o.range_filter and not o.nvtx_include and o.profile_from_start is not False:
        yield (
            (*c.here, "range_filter"),
            f"range_filter {o.range_filter!r} counts NVTX ranges matched by nvtx_include and "
            "cudaProfilerStart/Stop ranges; with neither nvtx_include nor profile_from_start: false "
            "it selects nothing you asked for.",
        )


def unbounded_expensive(c: Context) -> Found:
    o = c.options
    sections = o.sections or ()
    big_set = o.section_set in EXPENSIVE_SETS
    if o.launch_count is not None:
        return
    if big_set:
        cost = "--set full: 37 passes, 3-4 s a kernel on an H200" if o.section_set == "full" else "many passes"
        yield (
            (*c.here, "set"),
            f"set {o.section_set!r} replays every matching launch many times ({cost}) and no launch_count "
            "bounds it; add launch_count (the manual: --launch-count 1).",
        )
    elif len(sections) >= MANY_SECTIONS:
        yield (
            (*c.here, "sections"),
            f"{len(sections)} sections replay every matching launch once per pass of each (SpeedOfLight alone: "
            "about 0.4 s a kernel on an H200) and no launch_count bounds it; add launch_count.",
        )


def kernel_regex_invalid(c: Context) -> Found:
    error = _regex_error(c.options.kernel_name)
    if error and error != TOO_DEEP:
        yield (
            (*c.here, "kernel_name"),
            f"the regex does not compile ({error}); ncu will refuse it ('Invalid regex provided').",
        )


def kernel_regex_too_deep(c: Context) -> Found:
    """A warning: Python's reader gives up on the nesting, which says nothing of ncu's."""
    if _regex_error(c.options.kernel_name) == TOO_DEEP:
        yield ((*c.here, "kernel_name"), "the regex is nested too deeply to check here; ncu decides")


def _regex_error(value: str | None) -> str | None:
    is_regex, pattern = split_regex(value or "")
    return compile_regex(pattern)[1] if is_regex else None


def skip_with_changing_filter(c: Context) -> Found:
    matrix = c.matrix or {}
    changing = [key for key in ("kernel_name", "kernel_id", "kernel_name_base", "nvtx_include") if key in matrix]
    if changing and {o.launch_skip for o in c.expansion} != {None}:
        yield (
            (*c.here, "matrix", changing[0]),
            f"launch_skip counts launches that match the filters, and {changing[0]} changes across this "
            "expansion: the same skip selects a different launch in each (the manual's pitfall 2). "
            "Find each skip with `ncucampaign discover --target`.",
        )


def python_stack_filter(c: Context) -> Found:
    o = c.options
    if o.python_include or o.python_exclude:
        yield (
            (*c.here, "python_include" if o.python_include else "python_exclude"),
            "Python call-stack filters need CPython 3.9+ in the profiled process and collect a stack at "
            "every launch (slower); library kernels may only show the calling op. The manual prefers NVTX.",
        )


def not_installed(c: Context) -> Found:
    installed, o = c.installed, c.options
    if installed is None:
        return
    version = installed.version or "?"
    for position, section in enumerate(o.sections or ()):
        if not split_regex(section)[0] and section not in installed.sections:
            close = difflib.get_close_matches(section, sorted(installed.sections), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else "see `ncu --list-sections`"
            yield (
                (*c.here, "sections", position),
                f"section {section!r} is not listed by the installed ncu ({version}); ncu will refuse it: {hint}",
            )
    if o.section_set and o.section_set not in installed.sets:
        close = difflib.get_close_matches(o.section_set, sorted(installed.sets), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        yield (
            (*c.here, "set"),
            f"set {o.section_set!r} is not listed by the installed ncu ({version}); ncu will refuse it: "
            f"{hint}(its sets: {', '.join(sorted(installed.sets))})",
        )


def option_not_in_installed(c: Context) -> Found:
    installed = c.installed
    if installed is None:
        return
    for problem in missing_options(list(c.flags), installed.facts, installed.options):
        yield c.here, f"{problem}; ncu will refuse it, and run refuses the campaign before starting"


def kill_without_count(c: Context) -> Found:
    if c.options.kill and c.options.launch_count is None:
        yield (
            (*c.here, "kill"),
            "kill stops the application once launch_count results are profiled; without launch_count it does nothing.",
        )


def collective_under_replay(c: Context) -> Found:
    o = c.options
    launcher = launcher_of(c.command)
    if o.target_processes != "all" or launcher is None or o.replay_mode not in (None, "kernel"):
        return
    collective = can_match_collective(o)
    if collective is None:
        return
    key = "kernel_id" if o.kernel_id else "kernel_name" if o.kernel_name else None
    fix = excluding_collectives(o.kernel_name) if not o.kernel_id else None
    if fix:
        advice = f"Exclude them: kernel_name: '{fix}'."
    elif c.installed is not None and c.installed.facts.multi_process:
        advice = "Profile them with communicator: shmem, communicator_shmem_num_peers and lockstep_kernel_launch."
    else:
        advice = (
            "ncu 2025.3.1 profiled them in no replay mode on a 2-rank job (docs/ncu-behaviour.md, "
            "'Multi-rank jobs'); ncu 2026.1 and later can, with communicator: shmem."
        )
    yield (
        (*c.here, key) if key else c.here,
        f"a multi-process job ({launcher}) whose kernel filter can match collective kernels such as "
        f"{collective!r}: ncu replays a profiled kernel alone, and a collective replayed alone waits for "
        "its peers forever (observed with torchrun and NCCL). " + advice,
    )


def cannot_start(c: Context) -> Found:
    """A warning, not an error: a script may be made between validate and run (a build step)."""
    if c.facts is not None and c.cwd is not None:
        found = why_cannot_start(Start(c.command, c.cwd, c.search, c.cwd_at is not None), c.facts)
        if found is not None:
            where, why = found
            yield (c.cwd_at if where == "cwd" and c.cwd_at is not None else c.command_at), why


RULES: dict[str, Rule] = {
    "NCU001": Rule("NVTX name without a trailing '/'", trailing_slash),
    "NCU002": Rule("'*' used as a glob inside an NVTX range name", glob_in_name),
    "NCU003": Rule("range filter without an NVTX include or the profiler-API switch", range_filter_without_ranges),
    "NCU004": Rule("expensive collection without a launch count", unbounded_expensive),
    "NCU005": Rule("kernel regex does not compile", kernel_regex_invalid, certain=True),
    "NCU006": Rule("comma inside a regex where ncu splits on commas", comma_in_nvtx_regex),
    "NCU007": Rule(
        "launch skip with a kernel filter that changes across an expansion", skip_with_changing_filter, per_target=True
    ),
    "NCU008": Rule("Python call-stack filter", python_stack_filter),
    "NCU009": Rule("section or set the installed ncu does not list", not_installed, certain=True),
    "NCU010": Rule("kill without a launch count", kill_without_count),
    "NCU011": Rule("kernel filter that can match collective kernels in a multi-process job", collective_under_replay),
    "NCU012": Rule("ncu option the installed ncu does not have", option_not_in_installed, certain=True),
    "NCU013": Rule("application that cannot start where it runs", cannot_start),
    "NCU014": Rule("kernel regex nested too deeply to check", kernel_regex_too_deep),
}
