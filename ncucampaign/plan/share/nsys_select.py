"""Selecting launches in an Nsight Systems trace as ncu's filters select them in its own. Pure. Only where the
meaning is documented and simple (reference.md, section 3): kernel names exact or `regex:` on the function name
or symbol, and push/pop NVTX expressions made of names, `/`, `*`, `+`, `[` and `]`, of the default domain or of one
that both place alike (PLACED_ALIKE); else ncu's trace (`why_not_nsys`). A selection that differs costs efficiency,
never a result: splits are verified."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from ncucampaign.plan.collectives import launcher_of
from ncucampaign.plan.share.launches import Launch
from ncucampaign.spec.model import TargetOptions
from ncucampaign.spec.ncu_grammar import DEFAULT_DOMAIN, split_regex

# Named NVTX domains whose push/pop ranges nsys and ncu were measured to place at the same launches, under the
# same names (docs/ncu-behaviour.md, "Workloads from published libraries": CUB's `CCCL` on moe_train, 152 of
# 2,000 launches). NCCL's are not (`multirank`): an export holding another domain's ranges is refused.
PLACED_ALIKE = frozenset({"CCCL"})
_SEP = "\x1f"  # between the names of a stack when it is matched as one string
# Options of a trace that this selection can stand in for when they are unset (or at these values).
_UNSET_OPTIONS = (
    "kernel_id",
    "launch_skip_before_match",
    "call_stack_type",
    "python_include",
    "python_exclude",
    "native_include",
    "native_exclude",
    "range_filter",
)


def why_not_launcher(app_argv: Sequence[str]) -> str | None:
    """Why an application started by a multi-process launcher is traced by ncu: its ranks' launches
    come from several processes, and NCCL's NVTX ranges are placed otherwise by nsys (on the zoo's
    `multirank`, one rank under torchrun, an nsys trace was refused after it ran: a start for nothing)."""
    launcher = launcher_of(app_argv)
    return f"a multi-process launcher ({launcher}) starts the application" if launcher else None


def why_not_nsys(options: TargetOptions, env: Mapping[str, str]) -> str | None:
    """Why the filters of a trace with `options` cannot be applied to an nsys trace (None: they can).
    `env`: the trace's environment (a --gpus view names its devices)."""
    if options.kernel_name_base not in (None, "function", "mangled"):
        return f"--kernel-name-base {options.kernel_name_base} is matched only by ncu"
    for key in _UNSET_OPTIONS:
        if getattr(options, key):
            return f"{key} is applied only by ncu"
    if options.target_processes not in (None, "all"):
        return f"--target-processes {options.target_processes} is applied only by ncu"
    if options.nvtx_push_pop_scope not in (None, "thread"):
        return f"--nvtx-push-pop-scope {options.nvtx_push_pop_scope} is applied only by ncu"
    visible = [d for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if options.devices is not None and tuple(options.devices) != tuple(range(len(visible))):
        return "--devices is applied only by ncu"
    for expression in (*(options.nvtx_include or ()), *(options.nvtx_exclude or ())):
        domain, body = _domain_of(expression)
        if domain != DEFAULT_DOMAIN and domain not in PLACED_ALIKE:
            return f"the NVTX expression {expression!r} names a domain whose ranges only ncu places as ncu does"
        if _stack_pattern(body) is None:
            return f"the NVTX expression {expression!r} is matched only by ncu"
    return None


def selector(options: TargetOptions) -> Callable[[Launch], bool]:
    """Whether the kernel and NVTX filters of `options` select a launch."""
    kernel = name_test(options)
    includes = [_compiled(e) for e in options.nvtx_include or ()]
    excludes = [_compiled(e) for e in options.nvtx_exclude or ()]

    def selects(launch: Launch) -> bool:
        if kernel is not None and not kernel(launch.symbol, launch.function):
            return False
        if not includes and not excludes:
            return True
        stacks: dict[str, str] = {}  # each domain's own stack, as ncu keeps one a domain
        for name in launch.nvtx:
            domain, _, range_name = name.partition(":")
            stacks[domain] = stacks.get(domain, "") + range_name + _SEP
        if includes and not any(p.search(stacks.get(d, "")) for d, p in includes):
            return False
        return not any(p.search(stacks.get(d, "")) for d, p in excludes)

    return selects


def selected(launches: Sequence[Launch], options: TargetOptions) -> list[int]:
    """The positions in `launches` of those the kernel and NVTX filters of `options` select."""
    selects = selector(options)
    return [position for position, launch in enumerate(launches) if selects(launch)]


def as_launch(position: int, launch: Launch, by_function: bool = False) -> Launch:
    """The launch as ncu lists it in `--page raw --csv` (by symbol, or with `by_function` by function
    name), numbered `position`."""
    return Launch(position, launch.function if by_function else launch.symbol, launch.grid, launch.block, launch.nvtx)


def name_test(options: TargetOptions) -> Callable[[str, str], bool] | None:
    """Whether the kernel name filter of `options` selects a kernel (its symbol, its function name);
    None: there is none."""
    name = options.kernel_name
    if name is None:
        return None
    is_regex, body = split_regex(name)
    mangled = options.kernel_name_base == "mangled"
    if is_regex:
        pattern = re.compile(body)
        return lambda symbol, function: pattern.search(symbol if mangled else function) is not None
    return lambda symbol, function: (symbol if mangled else function) == body


def _compiled(expression: str) -> tuple[str, re.Pattern[str]]:
    domain, body = _domain_of(expression)
    pattern = _stack_pattern(body)
    assert pattern is not None, "why_not_nsys refuses what cannot be matched"
    return domain, re.compile(pattern)


def _domain_of(expression: str) -> tuple[str, str]:
    """(domain, the rest) of an expression: `D@rest` names D (one `@`, outside a `regex:`), else the default."""
    if not expression.startswith("regex:") and expression.count("@") == 1 and not expression.startswith("@"):
        domain, _, body = expression.partition("@")
        return domain, body
    return DEFAULT_DOMAIN, expression


def _stack_pattern(expression: str) -> str | None:
    """A regex over a stack written as NAME<sep> from the bottom up, for a push/pop expression of the
    default domain; None for what only ncu matches (a start/end expression, a domain, `regex:`, escapes)."""
    if expression.startswith("regex:") or any(mark in expression for mark in "@\\,"):
        return None
    bottom, top = expression.startswith("["), expression.endswith("]")
    body = expression.removeprefix("[").removesuffix("]")
    if "/" not in body and not (bottom or top):
        return None  # a start/end range
    parts = body.split("/")
    if parts and parts[-1] == "":
        parts.pop()  # 'A/': the trailing delimiter marks a push/pop range
    if not parts or any(not part or "[" in part or "]" in part for part in parts):
        return None
    if parts[0] in ("*", "+") or parts[-1] in ("*", "+"):
        return None
    regex = []
    for part in parts:
        if part == "*":
            regex.append(f"(?:[^{_SEP}]*{_SEP})*")
        elif part == "+":
            regex.append(f"[^{_SEP}]*{_SEP}")
        else:
            regex.append(re.escape(part) + _SEP)
    start = "^" if bottom else f"(?:^|(?<={_SEP}))"
    return start + "".join(regex) + ("$" if top else "")
