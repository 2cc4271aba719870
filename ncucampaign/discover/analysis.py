"""Find the kernels worth profiling, cheaply: one ncu pass collecting only gpu__time_duration.sum (about 0.02 s
a kernel on an H200, against 0.4 s for SpeedOfLight), then a table and target YAML. Pure. Ordinals are ncu's
own: with `--target` the pass runs with the target's filters (minus skip and count), so the n-th listed launch
is the one `launch_skip: n` selects; suggestions count launches with ncu_report's NVTX filter (ncu's grammar)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from ncucampaign.execute.attempt.diagnose import LIBRARY_PICKED
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.union import one_metric_options, one_metric_pass
from ncucampaign.results.reading.reader import ReportedLaunch
from ncucampaign.spec.model import TargetOptions
from ncucampaign.spec.ncu_grammar import nvtx_scope
from ncucampaign.spec.roles import KERNEL_KEYS, SCOPE_KEYS

Mode = Literal["all", "scope", "target"]
DEFAULT_LAUNCH_LIMIT = 300
SUGGEST_TOP = 5

# What a target's "scope" is: where and in which process its kernels run, not which kernel; --target
# also keeps the kernel filters, so ncu itself counts the launches launch_skip counts (spec/roles.py).
FILTER_KEYS = (*SCOPE_KEYS, *KERNEL_KEYS)


def discovery_invocation(base: Invocation, mode: Mode, launch_limit: int) -> Invocation:
    """The cheap pass: the base invocation's scope (or filters), one metric, bounded by a launch limit."""
    keep = FILTER_KEYS if mode == "target" else SCOPE_KEYS
    values: dict[str, Any] = {key: getattr(base.options, key) for key in keep}
    for key in ("config_file", "rename_kernels"):  # a bare command (discover -- CMD) reads none either
        values[key] = False if values.get(key) is None else values[key]
    values["nvtx"] = True  # record NVTX ranges so every launch shows where it ran
    return one_metric_pass(base, "discover", one_metric_options(values, launch_limit), own_target=False)


def launch_limit_for(options: TargetOptions, requested: int | None) -> int:
    if requested is not None:
        return requested
    needed = (options.launch_skip or 0) + (options.launch_count or 1) + 100
    return max(DEFAULT_LAUNCH_LIMIT, needed)


@dataclass(frozen=True)
class KernelSummary:
    function: str
    demangled: str
    launches: int
    total_ns: float
    mean_ns: float
    share: float
    nvtx: tuple[tuple[str, int], ...]  # path and launches under it, most common first
    ordinals: tuple[int, ...]


def summarize_kernels(launches: Sequence[ReportedLaunch]) -> list[KernelSummary]:
    """One row per kernel (demangled name), sorted by total GPU time."""
    groups: dict[str, list[ReportedLaunch]] = {}
    for launch in launches:
        groups.setdefault(launch.demangled, []).append(launch)
    grand_total = sum(launch.duration_ns or 0.0 for launch in launches) or 1.0
    rows = []
    for demangled, members in groups.items():
        total = sum(m.duration_ns or 0.0 for m in members)
        paths = Counter(path for m in members for path in (m.nvtx or ("",)))
        rows.append(
            KernelSummary(
                function=members[0].function,
                demangled=demangled,
                launches=len(members),
                total_ns=total,
                mean_ns=total / len(members),
                share=total / grand_total,
                nvtx=tuple(sorted(paths.items(), key=lambda item: (-item[1], item[0]))),
                ordinals=tuple(m.ordinal for m in members),
            )
        )
    return sorted(rows, key=lambda row: (-row.total_ns, row.function))


@dataclass(frozen=True)
class Suggestion:
    name: str
    options: dict[str, Any]
    comment: str
    matching: int  # launches that match the suggested filters in the discovery run
    discovery_ordinal: int  # the picked launch's position in the discovery report


def suggest_targets(
    kernels: Sequence[KernelSummary],
    launches: Sequence[ReportedLaunch],
    in_scope: Callable[[str], set[tuple[int, int]]] | None,
    base_options: dict[str, Any] | None = None,
    top: int = SUGGEST_TOP,
    nth: int | None = None,
) -> list[Suggestion]:
    """Paste-ready targets for the `top` kernels, each picking one launch (by default the middle one) with
    launch_skip. Whole-application discovery scopes each kernel to the NVTX path most of its launches ran under
    (`in_scope(expression)`: the (range, action) pairs ncu's NVTX filter selects); scoped discovery (`in_scope`
    None) lists only what the scope's filters let through, and suggestions keep `base_options`."""
    functions = Counter(k.function for k in kernels)
    suggestions: list[Suggestion] = []
    used: set[str] = set()
    for kernel in kernels[:top]:
        options: dict[str, Any] = dict(base_options or {})
        matching = _filters_for(kernel, launches, in_scope, options)
        own = [launch for launch in matching if launch.demangled == kernel.demangled]
        if not own:
            continue
        pick = min(max((nth or (len(own) + 1) // 2) - 1, 0), len(own) - 1)
        chosen = own[pick]
        skip = matching.index(chosen)
        options["launch_skip"] = skip
        options["launch_count"] = 1
        name = _unique(target_name(kernel.function), used)
        duration = f", {chosen.duration_ns / 1000:.1f} us" if chosen.duration_ns is not None else ""
        picked = LIBRARY_PICKED.match(kernel.function) is not None
        head = f"{kernel.function}: {kernel.launches} launches, {kernel.share:.1%} of GPU time in the discovery run."
        if functions[kernel.function] > 1:  # template instances share a function name: name the one picked
            head = (
                f"{short(readable(kernel.demangled), 160)}: one of {functions[kernel.function]} instances of "
                f"{kernel.function}, {kernel.launches} launches, {kernel.share:.1%} of GPU time in the discovery run."
            )
        comment = (
            f"{head} launch_skip {skip} picks launch {skip + 1} of the {len(matching)} that match these filters"
            + (f", launch {pick + 1} of this instance's {len(own)}" if len(own) != len(matching) else "")
            + f" (discovery launch #{chosen.ordinal}{duration})"
            + (". cuBLAS or cuDNN picked it for this GPU model and shape: discover again on another" if picked else "")
        )
        suggestions.append(Suggestion(name, options, comment, len(matching), chosen.ordinal))
    return suggestions


def _filters_for(
    kernel: KernelSummary,
    launches: Sequence[ReportedLaunch],
    in_scope: Callable[[str], set[tuple[int, int]]] | None,
    options: dict[str, Any],
) -> list[ReportedLaunch]:
    """Add the kernel's filters (and NVTX scope) to `options`; the launches they match, in order. A template
    instance is picked by its function name and the skip among every launch of that name, not by a regex over
    its demangled text: that text runs to hundreds of characters, and ncu writes it differently from one
    report to another and from its report reader (docs/ncu-behaviour.md, "Launch identity"), while the
    function name is what ncu's --kernel-name matches by default."""
    path = kernel.nvtx[0][0] if kernel.nvtx else ""
    selected = None
    if path and in_scope is not None:
        options["nvtx_include"] = nvtx_scope(path)
        selected = in_scope(options["nvtx_include"])
    options["kernel_name"] = kernel.function
    same = [launch for launch in launches if launch.function == kernel.function]
    return [launch for launch in same if selected is None or (launch.range_index, launch.action_index) in selected]


def target_name(function: str, limit: int = 60) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", function).strip("_.-") or "kernel"
    return name[:limit].rstrip("_.-")


def _unique(name: str, used: set[str]) -> str:
    candidate, number = name, 2
    while candidate in used:
        candidate, number = f"{name}-{number}", number + 1
    used.add(candidate)
    return candidate


def suggestions_yaml(suggestions: Sequence[Suggestion]) -> str:
    """The suggestions as a YAML list to paste under `targets:`."""
    blocks = []
    for suggestion in suggestions:
        body = yaml.safe_dump([{"name": suggestion.name, **suggestion.options}], sort_keys=False, width=1000)
        comment = "\n".join(f"# {line}" for line in _wrap(suggestion.comment))
        blocks.append(f"{comment}\n{body}")
    return "\n".join(blocks)


def _wrap(text: str, width: int = 100) -> list[str]:
    lines, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    return [*lines, current] if current else lines


def profiled_ordinals(launches: Sequence[ReportedLaunch], options: TargetOptions) -> frozenset[int]:
    """Of every launch the target's filters matched (ncu filtered them), the ordinals its skip and count profile."""
    skip = options.launch_skip or 0
    end = skip + options.launch_count if options.launch_count is not None else len(launches)
    return frozenset(launch.ordinal for launch in launches[skip:end])


_QUALIFIER = re.compile(r"(?:\(anonymous namespace\)|<unnamed>|\b[A-Za-z_]\w*)::(?!\[|operator\b)")


def readable(demangled: str) -> str:
    """A demangled name as a person scans it: no return type, no namespace qualifiers, no parameter list.
    PyTorch's template instances share their first 40 characters (`void at::native::elementwise_kernel<128,
    2, at::native::...`); what tells them apart comes after."""
    text = _QUALIFIER.sub("", demangled.removeprefix("void "))
    if text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, 0, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                text = text[:i] if text[i - 1] in ">_" or text[i - 1].isalnum() else text
                break
    return text


def short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"
