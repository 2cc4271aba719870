"""What a discovery trace says about a group's members: per member, the launches its own filters
select in the trace and the ones it wants (ncu re-applies the filters on import; docs/ncu-behaviour.md,
"Shared runs"), and which members the trace cannot place."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ncucampaign.execute.context import RunContext
from ncucampaign.execute.rundir.manifest import TraceInfo
from ncucampaign.execute.shared.imports import IMPORT_WORKERS, ImportFailed, Launch, importer_of, list_launches
from ncucampaign.execute.shared.trace_run import trace_for
from ncucampaign.execute.shared.traces import TraceCache
from ncucampaign.execute.shared.windows import member_wanted
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.union import FUNCTION_NAMES, filter_words, import_csv_argv
from ncucampaign.spec.model import TargetOptions

Selection = tuple[list[Launch], tuple[Launch, ...]]  # what a member's filters select, and what it wants


@dataclass(frozen=True)
class Short:
    """A member whose filters select fewer launches in the trace than its skip and count reach."""

    member: Invocation
    reason: str
    selected: int  # how many they select

    @property
    def nothing_to_profile(self) -> bool:
        """Even its own run would profile nothing: every launch it selects is skipped."""
        return self.selected <= (self.member.options.launch_skip or 0)


@dataclass(frozen=True)
class TraceSelections:
    info: TraceInfo
    report: Path
    every: list[Launch]  # every launch of the trace
    selected: dict[str, Selection]  # the members the trace places
    beyond: list[Invocation]  # their launches lie beyond the trace: it stopped before them
    never: list[Short]  # the application ended first: their launches do not exist
    functions: dict[int, str] = field(default_factory=dict)  # trace ID -> function name ({}: unknown)

    @property
    def complete(self) -> bool:
        """The application ran to its end under the trace: what it does not hold never happened."""
        return len(self.every) < self.info.launches


def trace_selections(
    ctx: RunContext,
    cache: TraceCache,
    members: Sequence[Invocation],
    gpus: tuple[str, ...] | None,
    lane: str | None,
    launches: int,
) -> TraceSelections | str:
    """The group's trace up to `launches` launches and what it says of each member; or why there is
    none. A cached trace that cannot be listed is dropped and traced again, once."""
    for _ in range(2):
        trace = trace_for(ctx, cache, members, gpus, lane, launches)
        if isinstance(trace, str):
            return trace
        report, info = trace
        with ThreadPoolExecutor(1) as side:
            names = side.submit(function_names, ctx, report)
            selections = select_launches(ctx, report, members)
            functions = names.result()
        if not (isinstance(selections, str) and info.reused):
            break
        cache.forget(info.key)  # a damaged cache entry
    if isinstance(selections, str):
        return selections
    every = selections.pop("")
    if isinstance(every, Short):  # never: listing every launch has no window that can miss
        return every.reason
    missed = [short for m in members if isinstance(short := selections[m.name], Short)]
    ended = len(every[0]) < launches
    return TraceSelections(
        info=info,
        report=report,
        every=every[0],
        selected={name: s for name, s in selections.items() if not isinstance(s, Short)},
        beyond=[] if ended else [short.member for short in missed],
        never=missed if ended else [],
        functions=functions,
    )


def function_names(ctx: RunContext, report: Path) -> dict[int, str]:
    """Trace ID -> the kernel's function name (what --kernel-id numbers launches by); {} when ncu
    cannot list them (then no picked windows)."""
    try:
        launches = list_launches(import_csv_argv(ctx.ncu_path, report, FUNCTION_NAMES), importer_of(ctx))
    except ImportFailed:
        return {}
    return {launch.id: launch.kernel for launch in launches}


def select_launches(ctx: RunContext, report: Path, members: Sequence[Invocation]) -> dict[str, Selection | Short] | str:
    """Per member, every launch its filters select in the trace and the ones it wants (or why the
    trace cannot say); under "" every launch of the trace. A string: the trace cannot be listed."""

    ncu, importer = ctx.ncu_path, importer_of(ctx)

    def selection(member: Invocation | None) -> Selection | Short:
        if member is None:
            every = list_launches(import_csv_argv(ncu, report), importer)
            return every, tuple(every)
        o = member.options
        skip, count = o.launch_skip or 0, o.launch_count or 1
        picked = list_launches(import_csv_argv(ncu, report, filter_words(o)), importer)  # all: partition prices them
        wanted = member_wanted(picked, skip, count)
        return Short(member, wanted, len(picked)) if isinstance(wanted, str) else (picked, wanted)

    names = ["", *(m.name for m in members)]
    try:
        with ThreadPoolExecutor(IMPORT_WORKERS) as pool:
            return dict(zip(names, pool.map(selection, [None, *members]), strict=True))
    except ImportFailed as exc:
        return f"the discovery trace cannot be listed: {exc}"


@dataclass(frozen=True)
class FilterParts:
    """What one member's kernel filter alone and its NVTX filters alone select in the trace (IDs)."""

    kernels: frozenset[int]
    scope: frozenset[int] | None  # None: it has no NVTX filter
    family: tuple[str, ...]  # its filters as ncu words: members alike share a family


def filter_parts(
    ctx: RunContext, report: Path, members: Sequence[Invocation], every: frozenset[int]
) -> dict[str, FilterParts] | str:
    """Per member, what its kernel filter and its NVTX filters select apart (one import per distinct
    filter; `every`: all the trace's IDs, for a member without a kernel filter); the partition prices
    a union's window with them. A string: the trace cannot be listed."""
    kernel_words = {m.name: tuple(filter_words(_only(m, "kernel_name", "kernel_name_base"))) for m in members}
    nvtx_words = {m.name: tuple(filter_words(_only(m, "nvtx_include", "nvtx_exclude"))) for m in members}
    distinct = list(dict.fromkeys(words for words in [*kernel_words.values(), *nvtx_words.values()] if words))

    ncu, importer = ctx.ncu_path, importer_of(ctx)

    def ids(words: tuple[str, ...]) -> frozenset[int]:
        listed = list_launches(import_csv_argv(ncu, report, list(words)), importer)
        return frozenset(launch.id for launch in listed)

    try:
        with ThreadPoolExecutor(IMPORT_WORKERS) as pool:
            found = dict(zip(distinct, pool.map(ids, distinct), strict=True))
    except ImportFailed as exc:
        return f"the discovery trace cannot be listed: {exc}"
    return {
        m.name: FilterParts(
            kernels=found[kernel_words[m.name]] if kernel_words[m.name] else every,
            scope=found[nvtx_words[m.name]] if nvtx_words[m.name] else None,
            family=(*kernel_words[m.name], "|", *nvtx_words[m.name]),
        )
        for m in members
    }


def _only(member: Invocation, *keys: str) -> TargetOptions:
    """The member's options with only `keys` set (the others as ncu's defaults)."""
    return TargetOptions.model_construct(**{key: getattr(member.options, key) for key in keys})
