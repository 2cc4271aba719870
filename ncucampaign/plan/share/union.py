"""What a shared run profiles and how its report is split: the union of its members' selections, and the
`ncu --import` commands that re-apply one member's filters (docs/ncu-behaviour.md, "Shared runs"). Pure."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from ncucampaign.plan.argv import escape_macros, render_option
from ncucampaign.plan.expand import Invocation
from ncucampaign.spec.keys import field_name, option_value
from ncucampaign.spec.model import TargetOptions
from ncucampaign.spec.ncu_catalog import DURATION, OPTION_SPECS
from ncucampaign.spec.ncu_grammar import escape_regex, split_regex
from ncucampaign.spec.roles import IMPORT_FILTERS

# Filters ncu re-applies when it imports a report: spec/roles.py's IMPORT_FILTERS (docs/ncu-behaviour.md,
# "Shared runs"). Call-stack filters are not among them: on the H200 an import with --python-include
# selected a launch outside the function, so targets share a run only with identical call-stack
# filters, applied by the run.
_INCLUDES = ("nvtx_include", "python_include", "native_include")
_EXCLUDES = ("nvtx_exclude", "python_exclude", "native_exclude")
# What a union sets itself, whatever its members say: members that differ only in these make the same union.
SET_BY_UNION: Mapping[str, object] = MappingProxyType(
    dict.fromkeys(("launch_skip", "launch_count", "launch_skip_before_match", "lint_ignore", "share")) | {"kill": True}
)
# `--set` names whose sections contain the previous one's (ncu --list-sets: basic < detailed < full).
SET_ORDER = ("basic", "detailed", "full")
# One trace pass, as far as the application goes up to this many matching launches (at ~0.02 s a
# launch, docs/ncu-behaviour.md "Cost": at most ~40 s of replay); a trace that ends before it is
# complete, and what it does not hold never happened.
TRACE_LAUNCHES = 2000
# ...or further, where the members reach further: each distinct filter's furthest wanted launch, summed, this many
# times (the union's filter matches the other members' kernels in between). A pool of 10,000 targets reaching the
# 5,000th launch of two kernels wanted 15,000 launches of the trace, beyond which its members ran alone.
TRACE_REACH = 4
# How a listing names kernels: by symbol (mangled) wherever launches are compared between reports,
# since the demangled text of one launch differs between reports (docs/ncu-behaviour.md, "Launch
# identity"); by function name, which --kernel-id numbers launches by.
SYMBOLS = "mangled"
FUNCTIONS = "function"
# What every command of ncucampaign's own passes: no config file's [Import] or [List] section changes
# how a report is listed or split (ncu reads one from the working directory by default).
NO_CONFIG = ("--config-file", "off")


Window = Literal["targets", "trace"]  # where a shared run's launch window comes from


def collects_default_set(options: TargetOptions) -> bool:
    """ncu collects its default set (basic) when nothing else is asked for."""
    return options.section_set is None and not options.sections and not options.metrics


def union_kernel_name(members: Sequence[Invocation]) -> str | None:
    """One `regex:` alternation matching what any member's --kernel-name matches; None when a member
    has no kernel filter (then the union cannot have one)."""
    names = [m.options.kernel_name for m in members]
    if any(name is None for name in names):
        return None
    distinct = list(dict.fromkeys(name for name in names if name is not None))
    if len(distinct) == 1:
        return distinct[0]
    parts = []
    for name in distinct:
        is_regex, body = split_regex(name)
        parts.append(f"({body})" if is_regex else f"^{escape_regex(body)}$")
    return "regex:" + "|".join(parts)


def union_options(members: Sequence[Invocation], with_nvtx: bool) -> TargetOptions:
    """The members' shared settings with the union of their filters and collections; the window
    (skip/count) is left for the caller."""
    first = members[0].options
    values: dict[str, Any] = {name: getattr(first, name) for name in TargetOptions.model_fields}
    values["kernel_name"] = union_kernel_name(members)
    # Each stops at the first member that settles it: 10,000 members without filters read 6 fields of each
    # for each of 171 unions (4 of the scale benchmark's 41 own seconds).
    for key in _INCLUDES:  # repeated includes are OR-ed: keep them only if every member has one
        every = all(getattr(m.options, key) for m in members)
        values[key] = tuple(dict.fromkeys(x for m in members for x in getattr(m.options, key))) if every else None
    for key in _EXCLUDES:  # an exclude is safe only when every member excludes it
        common = set(getattr(first, key) or ())
        for member in members:
            if not common:
                break
            common &= set(getattr(member.options, key) or ())
        values[key] = tuple(x for x in (getattr(first, key) or ()) if x in common) or None
    stacks = [s for m in members for s in (m.options.call_stack_type or ())]
    values["call_stack_type"] = tuple(dict.fromkeys(stacks)) or None
    values["nvtx"] = True if with_nvtx or any(m.options.nvtx for m in members) else None
    values.update(_union_collection(members))
    values.update(SET_BY_UNION)
    return TargetOptions.model_construct(**values)


def _union_collection(members: Sequence[Invocation]) -> dict[str, Any]:
    sets = [m.options.section_set for m in members if m.options.section_set is not None]
    if any(collects_default_set(m.options) for m in members):
        sets.append("basic")
    chosen = max(sets, key=lambda s: SET_ORDER.index(s) if s in SET_ORDER else -1) if sets else None
    sections = tuple(dict.fromkeys(s for m in members for s in (m.options.sections or ())))
    metrics = tuple(dict.fromkeys(x for m in members for x in (m.options.metrics or ())))
    return {"section_set": chosen, "sections": sections or None, "metrics": metrics or None}


def picks_possible(options: TargetOptions) -> bool:
    """A union selects launches by invocation number (`--kernel-id`) only where that was measured ("Picked
    windows"): names matched as function names, no call-stack filter, and no ':' in the kernel filter."""
    stacks = ("python_include", "python_exclude", "native_include", "native_exclude", "call_stack_type")
    return (
        options.kernel_name_base in (None, "function")
        and options.kernel_id is None
        and options.launch_skip_before_match is None
        and not any(getattr(options, key) for key in stacks)
        and ":" not in split_regex(options.kernel_name or "")[1]
    )


def picked(inv: Invocation, invocations: Sequence[int], count: int, functions: Sequence[str] = ()) -> Invocation:
    """The union with its kernel filter moved into `--kernel-id ::regex:NAMES:N1|N2|...` and its count;
    NAMES: exactly `functions` when given, else the union's own kernel filter."""
    name = inv.options.kernel_name or ""
    is_regex, body = split_regex(name) if name else (False, "")
    kernel = f"regex:{body}" if is_regex else name
    if functions:
        kernel = "regex:^(" + "|".join(escape_regex(function) for function in functions) + ")$"
    numbers = "|".join(str(n) for n in invocations)
    return with_options(inv, kernel_name=None, kernel_id=f"::{kernel}:{numbers}", launch_skip=None, launch_count=count)


def collection_words(options: TargetOptions) -> list[str]:
    """What a target asks ncu to collect, as words for the manifest: ['set:full', 'SpeedOfLight', 'metric:x']."""
    words = [f"set:{options.section_set}"] if options.section_set else []
    words += list(options.sections or ())
    words += [f"metric:{m}" for m in options.metrics or ()]
    return words or ["set:basic (ncu's default)"]


def with_options(inv: Invocation, **changes: Any) -> Invocation:
    """The invocation with some options replaced (names are campaign keys or field names)."""
    values = {field_name(key): value for key, value in changes.items()}
    return dataclasses.replace(inv, options=inv.options.model_copy(update=values))


def filter_words(options: TargetOptions) -> list[str]:
    """A member's import-capable filters as ncu options, in ncu's own option order."""
    argv: list[str] = []
    for spec in OPTION_SPECS:
        if spec.key in IMPORT_FILTERS:
            value = option_value(options, spec.key)
            if value is not None:
                argv.extend(render_option(spec, value))
    return argv


def import_csv_argv(
    ncu: str, report: Path, filters: Sequence[str] = (), count: int | None = None, names: str = SYMBOLS
) -> list[str]:
    """List a report's results (optionally filtered; the first `count`) as ncu's raw CSV page, kernels
    named by `names` (a --print-kernel-base)."""
    window = ["--launch-count", str(count)] if count is not None else []
    page = ["--print-kernel-base", names, "--page", "raw", "--csv"]
    return [ncu, "--import", str(report), *NO_CONFIG, *filters, *window, *page]


def split_argv(
    ncu: str, union_report: Path, filters: Sequence[str], skip: int | str, count: int, out: Path
) -> list[str]:
    """Export one member's launches from the union's report into its own report."""
    window = (["--launch-skip", str(skip)] if skip else []) + ["--launch-count", str(count)]
    return [ncu, "--import", str(union_report), *NO_CONFIG, *filters, *window, "-f", "-o", escape_macros(str(out))]


def split_words_problem(argv: Sequence[str]) -> str | None:
    """Why a recorded split command is not one split_argv writes (None: it is): `<ncu> --import R <filters and
    window> -f -o OUT`, its options only the import filters, the window and --config-file off. `export` reads the
    command from a run directory, which anyone may have edited: an option such as --section-folder would have ncu
    run the rule files of a folder the file names."""
    if len(argv) < 5 or argv[1] != "--import" or argv[-3:-1] != ["-f", "-o"]:
        return "not a split command (<ncu> --import REPORT ... -f -o OUT)"
    allowed = {spec.flag for spec in OPTION_SPECS if spec.key in IMPORT_FILTERS and spec.form != "switch"}
    allowed |= {"--launch-skip", "--launch-count", NO_CONFIG[0]}  # each with a value, as the filters
    words = list(argv[3:-3])
    for flag, value in zip(words[::2], words[1::2], strict=False):
        if flag not in allowed:
            return f"it holds {flag!r}, which no split command of a run has"
        if flag == NO_CONFIG[0] and value != NO_CONFIG[1]:
            return f"--config-file {value!r}: a split command reads no config file"
    return "an option without its value" if len(words) % 2 else None


def trace_options(members: Sequence[Invocation], launches: int) -> TargetOptions:
    """The cheap discovery trace of a group: the union's filters (so result IDs count the launches the shared run
    can profile), one metric, NVTX stacks for identities, the first `launches` (~0.02 s a launch)."""
    union = union_options(members, with_nvtx=True)
    stacks = ("call_stack_type", "python_include", "python_exclude", "native_include", "native_exclude")
    keep = (
        *IMPORT_FILTERS,
        *stacks,
        "devices",
        "target_processes",
        "nvtx_push_pop_scope",
        "config_file",
        "rename_kernels",
    )
    values: dict[str, Any] = {field_name(k): option_value(union, k) for k in keep}
    # Which launches run does not depend on cache or clock control; not flushing caches is cheaper.
    return one_metric_options({**values, "cache_control": "none", "clock_control": "none", "nvtx": True}, launches)


def one_metric_options(filters: dict[str, Any], launches: int) -> TargetOptions:
    """One metric (the duration) for the first `launches` launches that `filters` let through, then the application
    is stopped: the discovery trace, the timing pass and discover's pass are this, with their own filters."""
    return TargetOptions.model_construct(
        **filters,
        metrics=(DURATION,),
        launch_count=launches,
        kill=True,
        extra_args=("--import-sass", "no"),  # no cubins in the report: smaller, faster to write
    )


def one_metric_pass(base: Invocation, name: str, options: TargetOptions, own_target: bool = True) -> Invocation:
    """`base` as a one-metric pass named `name` (its own target, unless `own_target` is False): never retried, and
    its launch count only an upper bound."""
    named = dataclasses.replace(base, name=name, options=options, retries=0, expect_launch_count=False)
    return dataclasses.replace(named, target=name, matrix=()) if own_target else named


def trace_launches(members: Sequence[Invocation]) -> int:
    """How many launches a pool's discovery trace profiles at most (TRACE_LAUNCHES, TRACE_REACH)."""
    reach: dict[tuple[str, ...], int] = {}
    for m in members:
        key = tuple(filter_words(m.options))
        reach[key] = max(reach.get(key, 0), (m.options.launch_skip or 0) + (m.options.launch_count or 1))
    return max(TRACE_LAUNCHES, TRACE_REACH * sum(reach.values()))


def trace_invocation(members: Sequence[Invocation], launches: int) -> Invocation:
    """The discovery trace of a group, as an invocation of its own (never retried)."""
    return one_metric_pass(members[0], "trace", trace_options(members, launches))


TIMING_LAUNCHES = 5_000  # ~0.03 s a launch (docs/ncu-behaviour.md, "Costs"): under 3 minutes, within a timeout


def timing_invocation(base: Invocation, launches: int) -> Invocation:
    """The timing pass of a campaign: its application command under ncu with one metric, every launch
    of every process (no filter), the first `launches` of them; cheap like the trace."""
    every = {"target_processes": "all", "cache_control": "none", "clock_control": "none"}
    files = {"config_file": base.options.config_file, "rename_kernels": base.options.rename_kernels}
    return one_metric_pass(base, "timing", one_metric_options({**every, **files}, launches))


def renamed(inv: Invocation, name: str) -> Invocation:
    """A shared run's invocation under its own name (its reports and logs are its own)."""
    return dataclasses.replace(inv, name=name, target=name, matrix=())


def union_launches(members: Sequence[Invocation], window: Window) -> int:
    """Launches the union profiles: exact for a "targets" window, pessimistic for "trace" (every
    member's skipped and wanted launches inside the window)."""
    ends = [(m.options.launch_skip or 0, m.options.launch_count or 1) for m in members]
    if window == "targets":
        return max(s + c for s, c in ends) - min(s for s, _ in ends)
    return sum(s + c for s, c in ends)
