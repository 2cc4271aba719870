"""What a discovery trace says of a group's members: the launches each one's filters select in it and the ones it
wants (ncu re-applies filters on import: docs/ncu-behaviour.md, "Shared runs"), and who it cannot place."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.rundir.manifest import TraceInfo
from ncucampaign.execute.trace.cache.store import TraceCache, TraceKey
from ncucampaign.execute.trace.cache.workload import key_of
from ncucampaign.execute.trace.contract import TraceAsk
from ncucampaign.execute.trace.listings import BY_FUNCTION, Listings
from ncucampaign.execute.trace.tracers import Trace, trace_for
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.cost import Costs
from ncucampaign.plan.share.group_plan import GroupPlan, MemberTrace, compose_group
from ncucampaign.plan.share.groups import union_for
from ncucampaign.plan.share.launches import Launch
from ncucampaign.plan.share.pricing import Placed, selected_ids
from ncucampaign.plan.share.union import filter_words, trace_invocation
from ncucampaign.plan.share.windows import member_wanted
from ncucampaign.spec.model import TargetOptions

_NONE = TargetOptions.model_construct()  # every launch: no filter
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
class FilterParts:
    """What one member's kernel filter alone and its NVTX filters alone select in the trace (IDs)."""

    kernels: frozenset[int]
    scope: frozenset[int] | None  # None: it has no NVTX filter
    family: tuple[str, ...]  # its filters as ncu words: members alike share a family


@dataclass(frozen=True)
class TraceSelections:
    trace: Trace  # the trace, and how to list more of it
    every: list[Launch]  # every launch of the trace
    selected: dict[str, Selection]  # the members the trace places
    beyond: list[Invocation]  # their launches lie beyond the trace: it stopped before them
    never: list[Short]  # the application ended first: their launches do not exist
    functions: dict[int, str] = field(default_factory=dict)  # trace ID -> function name ({}: unknown)
    parts: dict[str, FilterParts] = field(default_factory=dict)  # per member, its filters apart
    frozen: dict[int, tuple[Launch, ...]] = field(default_factory=dict)  # a listing as one tuple (member_trace)
    asked: int = 0  # the launches it was asked to hold at most: it holds fewer where its timeout cut it

    @property
    def info(self) -> TraceInfo:
        return self.trace.info

    @property
    def names(self) -> dict[str, str]:
        """Symbol -> function name, for what people read and for ncu's numbering per function."""
        return {launch.symbol: self.functions[launch.id] for launch in self.every if launch.id in self.functions}

    @property
    def beyond_reason(self) -> str:
        """Why the members `beyond` run alone: the trace held its launch count, or its timeout or the application's
        failure cut it."""
        held = self.info.launches
        if held >= self.asked:
            return f"its launches lie beyond the discovery trace's first {held} launches"
        cut = "by its timeout, which a longer one lets reach them, or by the application's failure: see its log"
        return f"its launches lie beyond the {held} launches the discovery trace held when it was cut short ({cut})"

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
    traced: Sequence[Invocation] = (),
    pinned: TraceInfo | None = None,
) -> TraceSelections | str:
    """The group's trace up to `launches` launches and what it says of each member; or why there is
    none (execute/trace/tracers.py: which tracer takes it, and what every trace must be). `traced`: whose trace it is
    when not the members' own (a union of a pool's second stage on a batch system: execute/shared/stages.py), and
    `pinned` the trace its first stage took of it (execute/trace/tracers.py)."""
    pool = tuple(traced or members)  # asked as the pool's first stage asked it: the same tracer, the same key
    trace = trace_invocation(pool, launches)
    # A pinned trace is found by the key it was taken under: this task's own would walk the working folder for nothing
    key = (
        TraceKey(pinned.key, reusable=False)
        if pinned
        else key_of(trace, ctx.book.manifest, gpus, cache.runs_root, cache.folder)
    )
    ask = TraceAsk(trace, pool, gpus, lane, key, pinned=pinned)
    found = trace_for(ctx, cache, ask, {(): _NONE, BY_FUNCTION: _NONE, **member_listings(members)})
    if isinstance(found, str):
        return found
    listed = found.listed
    every = listed[()]
    selections = {m.name: _selection(m, listed[tuple(filter_words(m.options))]) for m in members}
    missed = [s for s in selections.values() if isinstance(s, Short)]
    ended = len(every) < found.info.launches  # not where a timeout cut it: then it holds that many
    return TraceSelections(
        trace=found,
        every=every,
        selected={name: s for name, s in selections.items() if not isinstance(s, Short)},
        beyond=[] if ended else [short.member for short in missed],
        never=missed if ended else [],
        functions={launch.id: launch.symbol for launch in listed.get(BY_FUNCTION, [])},  # listed by function
        parts=_filter_parts(members, listed, frozenset(launch.id for launch in every)),
        asked=launches,
    )


def member_listings(members: Sequence[Invocation]) -> dict[tuple[str, ...], TargetOptions]:
    """The listings of a trace its members need, each distinct filter once: each member's filters, and its
    kernel and NVTX filters apart (the partition prices a union's window with them)."""
    wanted: dict[tuple[str, ...], TargetOptions] = {}
    for m in members:
        kernels, nvtx = _part_words(m)
        wanted.setdefault(tuple(filter_words(m.options)), m.options)
        if kernels not in wanted:
            wanted[kernels] = _only(m, *_KERNEL_KEYS)
        if nvtx not in wanted:
            wanted[nvtx] = _only(m, *_NVTX_KEYS)
    return wanted


def _selection(member: Invocation, picked: list[Launch]) -> Selection | Short:
    """What the member's filters select (all: the partition prices them) and the launches it wants."""
    o = member.options
    wanted = member_wanted(picked, o.launch_skip or 0, o.launch_count or 1)
    return Short(member, wanted, len(picked)) if isinstance(wanted, str) else (picked, wanted)


_KERNEL_KEYS = ("kernel_name", "kernel_name_base")
_NVTX_KEYS = ("nvtx_include", "nvtx_exclude")


def _part_words(member: Invocation) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Its kernel filter and its NVTX filters, each alone, as ncu words."""
    o = member.options
    kernels = _words(_KERNEL_KEYS, (o.kernel_name, o.kernel_name_base))
    nvtx = tuple(tuple(v) if isinstance(v, list) else v for v in (o.nvtx_include, o.nvtx_exclude))  # hashable
    return kernels, _words(_NVTX_KEYS, nvtx)


@functools.lru_cache(maxsize=4096)
def _words(keys: tuple[str, ...], values: tuple[Any, ...]) -> tuple[str, ...]:
    """The ncu words of options with only `keys` set, once per distinct value: options built for each of
    10,000 members, twice each, were 3 of the scale benchmark's 37 own seconds."""
    return tuple(filter_words(TargetOptions.model_construct(**dict(zip(keys, values, strict=True)))))


def _filter_parts(members: Sequence[Invocation], listed: Listings, every: frozenset[int]) -> dict[str, FilterParts]:
    """Per member, what its kernel filter and its NVTX filters select apart (`every`: for a member
    without a kernel filter)."""

    sets: dict[tuple[str, ...], frozenset[int]] = {}  # one per distinct filter: 10,000 members made 3 GB each

    def ids(words: tuple[str, ...]) -> frozenset[int]:
        if words not in sets:
            sets[words] = frozenset(launch.id for launch in listed[words])
        return sets[words]

    parts, made = {}, {}
    for m in members:
        kernels, nvtx = _part_words(m)
        if (kernels, nvtx) not in made:
            made[kernels, nvtx] = FilterParts(
                kernels=ids(kernels) if kernels else every,
                scope=ids(nvtx) if nvtx else None,
                family=(*kernels, "|", *nvtx),
            )
        parts[m.name] = made[kernels, nvtx]
    return parts


def _only(member: Invocation, *keys: str) -> TargetOptions:
    """The member's options with only `keys` set (the others as ncu's defaults)."""
    return TargetOptions.model_construct(**{key: getattr(member.options, key) for key in keys})


def placed_members(members: Sequence[Invocation], found: TraceSelections) -> list[Placed]:
    """The members the trace places, with what their filters select apart (for the union's window)."""
    placed, shared = [], {}  # members with the same filters share what they select (one tuple, not one each)
    for m in (m for m in members if m.name in found.selected):
        picked, wanted = found.selected[m.name]
        part = found.parts.get(m.name)
        if id(picked) not in shared:
            shared[id(picked)] = tuple(x.id for x in picked)
        ids, wanted_ids = shared[id(picked)], tuple(x.id for x in wanted)
        if part is None:  # priced from its own selection alone
            placed.append(Placed(m, ids, wanted_ids))
        else:
            placed.append(Placed(m, ids, wanted_ids, part.kernels, part.scope, part.family))
    return placed


def member_trace(member: Invocation, found: TraceSelections) -> MemberTrace:
    """What the trace says of `member`, for composing its group (plan/share/group_plan.py)."""
    part = found.parts.get(member.name)
    selected, wanted = found.selected[member.name]
    if id(selected) not in found.frozen:  # one tuple for the members of one listing
        found.frozen[id(selected)] = tuple(selected)
    return MemberTrace(member, found.frozen[id(selected)], tuple(wanted), part.kernels if part is not None else None)


def union_selection(
    ctx: RunContext,
    cache: TraceCache,
    found: TraceSelections,
    placed: Sequence[Placed],
    union: Invocation,
    pool: Invocation,
) -> list[Launch] | str:
    """What a group's union filter selects in the trace (or why it cannot be listed): all of it for the pool's own
    union (`pool`); without NVTX excludes, what the members' kernel filters select, OR-ed, within their NVTX
    includes, OR-ed (docs/ncu-behaviour.md, "Shared runs"), known from the partition's listings; else a listing."""
    if filter_words(union.options) == filter_words(pool.options):
        return found.every
    if all(p.kernels is not None for p in placed) and not any(p.member.options.nvtx_exclude for p in placed):
        ids = selected_ids(placed)
        return [launch for launch in found.every if launch.id in ids]
    words = tuple(filter_words(union.options))
    listed = found.trace.more(ctx, cache, {words: union.options})
    return listed if isinstance(listed, str) else listed[words]


def composed_on(
    ctx: RunContext, cache: TraceCache, found: TraceSelections, placed: Sequence[Placed], pool: Invocation, costs: Costs
) -> GroupPlan:
    """A group of `placed` members composed on the trace (plan/share/group_plan.py), or why not (`why_not`)."""
    members = [p.member for p in placed]
    union = union_for(members, "trace")
    selected = union_selection(ctx, cache, found, placed, union, pool)
    if isinstance(selected, str):
        return GroupPlan(why_not=selected)
    return compose_group([member_trace(m, found) for m in members], union, selected, found.functions, costs)
