"""Explain a target that profiled nothing or that ncu refused, from ncu's own output and the target's options: the
troubleshooting routine of docs/ncu-behaviour.md ("When nothing is profiled"), applied. Pure."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from ncucampaign.execute.attempt.classify import ConsoleSummary
from ncucampaign.execute.attempt.replay_hang import NcuChecks, replay_hang_hints
from ncucampaign.execute.rundir.status import Status
from ncucampaign.spec.model import TargetOptions
from ncucampaign.spec.ncu_catalog import known_options, known_sections
from ncucampaign.spec.ncu_grammar import compile_regex, escape_regex, split_regex


def diagnose(
    options: TargetOptions, console: ConsoleSummary, status: Status, checks: NcuChecks | None = None
) -> list[str]:
    if status == Status.NO_KERNELS:
        return _no_kernels(options, console)
    if status == Status.USAGE_ERROR:
        return _usage(console.errors)
    if status == Status.REPLAY_HANG:
        return replay_hang_hints(options, console, checks)
    return []


def _no_kernels(options: TargetOptions, console: ConsoleSummary) -> list[str]:
    """The cause ncu's output shows comes first; the other checks only when none is found."""
    hints = _start_end_hints(options, console)
    decisive = bool(hints)
    if options.kernel_name and console.available_kernels:
        name_hints, name_is_wrong = _kernel_name_hints(options, console.available_kernels)
        hints.extend(name_hints)
        decisive = decisive or name_is_wrong
    if decisive:
        return hints
    return hints + _push_pop_hints(console) + _process_hints(options, console) + _selection_hints(options)


def _start_end_hints(options: TargetOptions, console: ConsoleSummary) -> list[str]:
    """An expression without a trailing '/' selects nvtxRangeStart/End ranges only; what torch and
    ncu_range() push are push/pop ranges, so the missing '/' is the cause (observed.md, nvtx_noslash)."""
    if not console.nvtx_start_end_note:
        return []
    bare = [e for e in options.nvtx_include or () if "/" not in e and "]" not in e and "[" not in e]
    fixed = ", ".join(f"'{e}/'" for e in bare) or "'name/'"
    return [
        "ncu: the NVTX include expressions match only start/end ranges. Ranges from torch.cuda.nvtx.range_push "
        f"or ncu_range() are push/pop ranges, written with a trailing '/': nvtx_include: {fixed}"
    ]


def _push_pop_hints(console: ConsoleSummary) -> list[str]:
    """ncu adds this note to every miss of an expression with a trailing '/', whatever the cause (the
    no_ranges.log fixture; the zoo's Kernel2 miss): it is a possibility, never the diagnosis."""
    if not console.nvtx_push_pop_note:
        return []
    return [
        "ncu notes that expressions with a trailing '/' match only push/pop ranges: only if the code marks "
        "its region with nvtxRangeStart/End (not range_push or ncu_range()) drop the '/'"
    ]


def _process_hints(options: TargetOptions, console: ConsoleSummary) -> list[str]:
    hints = []
    if not console.connected_pids and not console.available_kernels:
        # ncu lists available kernels only of a process it connected to (and a trace-decided miss
        # has no console of its own, only the trace's kernels)
        hints.append("ncu never connected to a CUDA process: did the application start and use the GPU?")
    elif not console.available_kernels:
        hints.append(
            "ncu listed no kernels at all: the profiled process launched none; check that the code path "
            "runs, and whether the CUDA work happens in a child process"
        )
    if options.target_processes == "application-only" or console.child_process_note:
        hints.append(
            "kernels launched by child processes (torchrun, multiprocessing, workers) need target_processes: all"
        )
    return hints


def _selection_hints(options: TargetOptions) -> list[str]:
    hints = []
    if options.nvtx_include and options.nvtx_push_pop_scope != "process":
        hints.append(
            "push/pop ranges are per thread: kernels launched from another thread (autograd backward, "
            "worker threads) are outside them; try nvtx_push_pop_scope: process"
        )
    if options.profile_from_start is False:
        hints.append(
            "profile_from_start: false: profiling starts only at cudaProfilerStart(); check that the "
            "application calls it (ncucampaign.markers.profiled_region) before the kernels run"
        )
    elif options.range_filter and options.range_filter.split(":")[1]:
        hints.append(
            "range_filter selects cudaProfilerStart/Stop ranges: if the code marks its region with them, "
            "set profile_from_start: false"
        )
    if options.range_filter:
        hints.append(
            f"range_filter {options.range_filter!r} selects range instances by number: check that the "
            "run reaches that many (the count is of ranges matching nvtx_include)"
        )
    if options.launch_skip:
        hints.append(
            f"launch_skip {options.launch_skip} may skip past every matching launch: list them with "
            "`ncucampaign discover FILE --target NAME`"
        )
    return hints


# Kernels cuBLAS and cuDNN pick at run time, by GPU model and problem shape (docs/ncu-behaviour.md, "Workloads from
# published libraries": a campaign made on an H200 named an nvjet GEMM an H100 never launched, and the other way round).
LIBRARY_PICKED = re.compile(r"\^?(nvjet_|cutlass|sm\d+_xmma|cudnn_generated_)")
LIBRARY_PICKED_HINT = (
    "cuBLAS and cuDNN pick such kernels by GPU model and problem shape: a campaign made on another GPU, or at "
    "other shapes, names kernels this one never launches; `ncucampaign discover` on this GPU names the ones it does"
)


def _kernel_name_hints(options: TargetOptions, available: Sequence[str]) -> tuple[list[str], bool]:
    """Hints about the kernel filter, and whether the filter itself is the cause."""
    requested = options.kernel_name or ""
    is_regex, pattern = split_regex(requested)
    if is_regex:
        compiled = compile_regex(pattern)[0]
        ran = [name for name in available if compiled.search(name)] if compiled else []
    else:
        ran = [name for name in available if name == pattern]
    if ran:
        return [
            f"{ran[0]!r} matches the kernel filter and did run, but not where the other filters look (NVTX scope, "
            "range filter, call stack, process, launch skip): drop them one at a time, as the manual advises"
        ], False
    close = closest_kernels(pattern, available, is_regex)
    if not close:
        return [
            f"no available kernel resembles {requested!r}; ncu saw: {', '.join(available[:8])}"
            + (" ..." if len(available) > 8 else "")
        ], True
    hints = [f"no kernel matches {requested!r}; closest available: {', '.join(close)}"]
    if LIBRARY_PICKED.match(pattern):  # not a typo: the nearest name is another GEMM or attention kernel
        return [*hints, LIBRARY_PICKED_HINT], True
    if options.kernel_name_base not in (None, "function"):
        hints.append(
            "ncu's Available Kernels are function names; kernel_name_base is "
            f"{options.kernel_name_base!r}, which matches other spellings"
        )
    hints.append(f"kernel_name: {evident_filter(pattern, available, is_regex)}")
    return hints, True


def closest_kernels(pattern: str, available: Sequence[str], is_regex: bool = False, count: int = 3) -> list[str]:
    """Available names closest to a requested name (or to the literal words of a regex)."""
    return [name for _, _, name in _scored(pattern, available, is_regex)[:count]]


def evident_filter(pattern: str, available: Sequence[str], is_regex: bool = False) -> str | None:
    """The filter a misspelled one evidently meant: the closest exact name; a regex only when several names are
    equally close and it selects exactly those (a misspelled rmsnrm_kernel means rmsnorm_kernel, not *_kernel)."""
    scored = _scored(pattern, available, is_regex)
    if not scored:
        return None
    best = [name for score, whole, name in scored if (score, whole) == scored[0][:2]]  # as close in part and whole
    if len(best) > 1:
        candidate = suggest_filter(best)
        compiled = compile_regex(split_regex(candidate)[1])[0]
        if compiled is not None and {n for n in available if compiled.search(n)} == set(best):
            return candidate
    return best[0]


# One typo in a word of four or more letters stays above it (0.75); a name that shares three letters of
# five with a word of a regex does not (the training loop's '(gemm|nvjet|...)' against
# vectorized_elementwise_kernel scored 0.6, and its hint pointed at an unrelated kernel).
MIN_SIMILARITY = 0.7


def _scored(pattern: str, available: Sequence[str], is_regex: bool) -> list[tuple[float, float, str]]:
    """(similarity, of the whole name, name) of the available names that resemble the request, most similar first:
    among names that hold the same close window, the one spelt most alike whole (`elementwies_kernel`:
    `elementwise_kernel` before `_scatter_gather_elementwise_kernel`)."""
    words = [w.lower() for w in re.findall(r"[A-Za-z0-9_]{3,}", pattern)] if is_regex else [pattern.lower()]
    scored = []
    for name in available:
        lowered = name.lower()
        whole = max((difflib.SequenceMatcher(None, word, lowered).ratio() for word in words), default=0.0)
        score = max((max(whole, _best_window(word, lowered)) for word in words), default=0.0)
        scored.append((round(score, 6), round(whole, 6), name))
    scored.sort(key=lambda item: (-item[0], -item[1], item[2]))
    return [item for item in scored if item[0] >= MIN_SIMILARITY]


def _best_window(word: str, name: str) -> float:
    """Similarity of `word` to the best same-length window of `name` (finds 'rmsnrom' in 'rmsnorm_kernel')."""
    if len(word) >= len(name):
        return 0.0
    return max(
        difflib.SequenceMatcher(None, word, name[i : i + len(word)]).ratio() for i in range(len(name) - len(word) + 1)
    )


def suggest_filter(names: Sequence[str]) -> str:
    """An exact name for one kernel, else a regex that matches these names."""
    if len(names) == 1:
        return names[0]
    common = _longest_common_substring(names)
    if len(common) >= 4:
        return f"regex:{escape_regex(common)}"
    return "regex:^(" + "|".join(escape_regex(n) for n in names) + ")$"


def _longest_common_substring(names: Sequence[str]) -> str:
    first, rest = names[0], names[1:]
    best = ""
    for start in range(len(first)):
        for end in range(len(first), start + len(best), -1):
            candidate = first[start:end]
            if all(candidate in other for other in rest):
                best = candidate
                break
    return best


def _usage(errors: Sequence[str]) -> list[str]:
    hints: list[str] = []
    for error in errors:
        if match := re.search(r"--section (\S+)' did not match any section", error):
            sections, _ = known_sections()
            close = difflib.get_close_matches(match.group(1), sorted(sections), n=3, cutoff=0.5)
            hints.append(
                f"unknown section {match.group(1)!r}"
                + (f"; did you mean {', '.join(close)}?" if close else "")
                + " (`ncu --list-sections` lists them)"
            )
        elif match := re.search(r"unrecognised option '([^']+)'", error):
            flags = [k for k in known_options() if k.startswith("--")]
            close = difflib.get_close_matches(match.group(1), flags, n=1, cutoff=0.75)
            hints.append(f"ncu has no option {match.group(1)!r}" + (f"; did you mean {close[0]!r}?" if close else ""))
        elif "Invalid regex provided" in error:
            hints.append(
                "ncu's regex engine rejected the kernel regex: check parentheses and brackets; in YAML no "
                "shell quoting is needed"
            )
        elif match := re.search(r"'([^']+)' does not exist or is not an executable", error):
            hints.append(
                f"{match.group(1)!r} is not an executable on PATH or relative to the working directory: "
                "check application.command and application.cwd"
            )
    return hints
