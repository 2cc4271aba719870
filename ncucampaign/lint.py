"""Warnings about campaigns that are valid but probably wrong, with the manual's reasoning.

Each rule has a stable code (NCU0xx) that `lint_ignore: [NCU001]` silences for a target (or, in
`defaults:`, for all). `ncucampaign validate --strict` turns warnings into errors. Pure: the
installed ncu's sections and sets are passed in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ncucampaign.errors import format_key_path
from ncucampaign.loader import LoadedCampaign
from ncucampaign.model import TargetOptions
from ncucampaign.plan import Plan

EXPENSIVE_SETS = {"full", "detailed", "roofline"}
MANY_SECTIONS = 4

RULES = {
    "NCU001": "NVTX name without a trailing '/'",
    "NCU002": "'*' used as a glob inside an NVTX range name",
    "NCU003": "range filter without an NVTX include or the profiler-API switch",
    "NCU004": "expensive collection without a launch count",
    "NCU005": "kernel regex does not compile",
    "NCU006": "comma inside a regex where ncu splits on commas",
    "NCU007": "launch skip with a kernel filter that changes across an expansion",
    "NCU008": "Python call-stack filter",
    "NCU009": "section or set the installed ncu does not list",
    "NCU010": "kill without a launch count",
}


@dataclass(frozen=True)
class LintWarning:
    code: str
    target: str
    path: tuple[str | int, ...]
    message: str
    line: int | None = None

    def render(self, file: str) -> str:
        where = f"{file}:{self.line}" if self.line else file
        return f"{where}: warning {self.code} {format_key_path(self.path)}: {self.message}"


@dataclass(frozen=True)
class InstalledNcu:
    """What the ncu on PATH lists (`ncu --list-sections`, `ncu --list-sets`)."""

    version: str | None
    sections: frozenset[str]
    sets: frozenset[str]


def lint_plan(loaded: LoadedCampaign, plan: Plan, installed: InstalledNcu | None = None) -> list[LintWarning]:
    warnings: dict[tuple[str, tuple[str | int, ...], str], LintWarning] = {}
    by_target: dict[int, list[TargetOptions]] = {}
    for inv in plan.invocations:
        by_target.setdefault(inv.target_index, []).append(inv.options)
        here = ("targets", inv.target_index)
        for found in _invocation_rules(inv.options, here, installed):
            code, path, message = found
            if code not in (inv.options.lint_ignore or ()):
                warnings.setdefault((code, path, message), LintWarning(code, inv.target, path, message))
    for index, options_list in by_target.items():
        target = loaded.campaign.targets[index]
        for code, path, message in _expansion_rules(options_list, target.matrix or {}, ("targets", index)):
            if code not in (options_list[0].lint_ignore or ()):
                warnings.setdefault((code, path, message), LintWarning(code, target.name, path, message))
    located = [LintWarning(w.code, w.target, w.path, w.message, loaded.line_of(w.path)) for w in warnings.values()]
    return sorted(located, key=lambda w: (w.line or 0, w.code))


Finding = tuple[str, tuple[str | int, ...], str]


def _invocation_rules(
    options: TargetOptions, here: tuple[str | int, ...], installed: InstalledNcu | None
) -> Iterable[Finding]:
    for key in ("nvtx_include", "nvtx_exclude"):
        for position, expression in enumerate(getattr(options, key) or ()):
            path = (*here, key, position)
            if _is_single_start_end_name(expression):
                yield (
                    "NCU001",
                    path,
                    f"{expression!r} has no trailing '/', so ncu matches it against start/end ranges only "
                    f"(nvtxRangeStart); PyTorch's range_push and ncu_range() make push/pop ranges: write "
                    f"'{expression}/'. Observed: ncu then profiles nothing.",
                )
            glob = _glob_in_name(expression)
            if glob:
                yield (
                    "NCU002",
                    path,
                    f"'*' in {glob!r} is not a glob in ncu's NVTX grammar: it matches a range literally named "
                    f"{glob!r}. Use 'regex:{glob.replace('*', '.*')}/' for a pattern, "
                    "or 'A/*/B' for ranges in between.",
                )
            if expression.startswith("regex:") and "," in expression:
                yield (
                    "NCU006",
                    path,
                    f"{expression!r}: ncu reads ',' in an NVTX expression as the start/end AND delimiter, "
                    "so a regex quantifier such as {1,3} is split; rewrite the regex without commas.",
                )
    if options.range_filter and not options.nvtx_include and options.profile_from_start is not False:
        yield (
            "NCU003",
            (*here, "range_filter"),
            f"range_filter {options.range_filter!r} counts NVTX ranges matched by nvtx_include and "
            "cudaProfilerStart/Stop ranges; with neither nvtx_include nor profile_from_start: false "
            "it selects nothing you asked for.",
        )
    sections = options.sections or ()
    expensive = options.section_set in EXPENSIVE_SETS or len(sections) >= MANY_SECTIONS
    if expensive and options.launch_count is None:
        what = f"set {options.section_set!r}" if options.section_set in EXPENSIVE_SETS else f"{len(sections)} sections"
        yield (
            "NCU004",
            (*here, "set" if options.section_set in EXPENSIVE_SETS else "sections"),
            f"{what} replays every matching launch many times (--set full: 37 passes, 3-4 s a kernel on an "
            "H200) and no launch_count bounds it; add launch_count (the manual: --launch-count 1).",
        )
    if options.kernel_name and options.kernel_name.startswith("regex:"):
        error = _regex_error(options.kernel_name[len("regex:") :])
        if error:
            yield (
                "NCU005",
                (*here, "kernel_name"),
                f"the regex does not compile ({error}); ncu will refuse it ('Invalid regex provided').",
            )
    if options.python_include or options.python_exclude:
        key = "python_include" if options.python_include else "python_exclude"
        yield (
            "NCU008",
            (*here, key),
            "Python call-stack filters need CPython 3.9+ in the profiled process and collect a stack at "
            "every launch (slower); library kernels may only show the calling op. The manual prefers NVTX.",
        )
    if installed is not None:
        for position, section in enumerate(sections):
            if not section.startswith("regex:") and section not in installed.sections:
                yield (
                    "NCU009",
                    (*here, "sections", position),
                    f"section {section!r} is not listed by the installed ncu ({installed.version or '?'}); "
                    "ncu will refuse it. See `ncu --list-sections`.",
                )
        if options.section_set and options.section_set not in installed.sets:
            yield (
                "NCU009",
                (*here, "set"),
                f"set {options.section_set!r} is not listed by the installed ncu ({installed.version or '?'}): "
                f"{', '.join(sorted(installed.sets))}.",
            )
    if options.kill and options.launch_count is None:
        yield (
            "NCU010",
            (*here, "kill"),
            "kill stops the application once launch_count results are profiled; without launch_count it does nothing.",
        )


def _expansion_rules(
    options_list: list[TargetOptions], matrix: dict[str, object], here: tuple[str | int, ...]
) -> Iterable[Finding]:
    changing = [key for key in ("kernel_name", "kernel_id", "kernel_name_base", "nvtx_include") if key in matrix]
    skips = {options.launch_skip for options in options_list}
    if changing and skips != {None}:
        yield (
            "NCU007",
            (*here, "matrix", changing[0]),
            f"launch_skip counts launches that match the filters, and {changing[0]} changes across this "
            "expansion: the same skip selects a different launch in each (the manual's pitfall 2). "
            "Find each skip with `ncucampaign discover --target`.",
        )


def _is_single_start_end_name(expression: str) -> bool:
    body = expression[len("regex:") :] if expression.startswith("regex:") else expression
    body = body.split("@", 1)[1] if "@" in body else body
    return bool(body) and not any(token in body for token in "/[],")


def _glob_in_name(expression: str) -> str | None:
    if expression.startswith("regex:"):
        return None
    body = expression.split("@", 1)[1] if "@" in expression else expression
    for name in re.split(r"(?<!\\)[/,]", body.strip("[]")):
        if "*" in name and name != "*" and "\\*" not in name:
            return name
    return None


def _regex_error(pattern: str) -> str | None:
    try:
        re.compile(pattern)
    except re.error as exc:
        return str(exc)
    return None


def parse_listing(text: str) -> frozenset[str]:
    """Identifiers from `ncu --list-sections` / `--list-sets` (first column of the table's rows)."""
    found = set()
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z][A-Za-z0-9_]*)\s+\S", line)
        if match and match.group(1) != "Identifier":
            found.add(match.group(1))
    return frozenset(found)
