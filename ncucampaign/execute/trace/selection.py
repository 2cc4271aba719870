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
from ncucampaign.execute.trace.by_ncu import trace_for
from ncucampaign.execute.trace.cache import TraceCache
from ncucampaign.execute.trace.listings import Listings
from ncucampaign.execute.trace.ncu_import import IMPORT_WORKERS, ImportFailed, importer_of, list_launches
from ncucampaign.own_time import CLOCK, TRACE_LISTING
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.group_plan import MemberTrace
from ncucampaign.plan.share.launches import Launch
from ncucampaign.plan.share.nsys_select import TracedLaunch, as_launch, selected, trace_holds
from ncucampaign.plan.share.partition import Placed
from ncucampaign.plan.share.union import FUNCTIONS, SYMBOLS, filter_words, import_csv_argv, trace_options
from ncucampaign.plan.share.windows import member_wanted
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
class FilterParts:
    """What one member's kernel filter alone and its NVTX filters alone select in the trace (IDs)."""

    kernels: frozenset[int]
    scope: frozenset[int] | None  # None: it has no NVTX filter
    family: tuple[str, ...]  # its filters as ncu words: members alike share a family


@dataclass(frozen=True)
class TraceSelections:
    info: TraceInfo
    report: Path
    every: list[Launch]  # every launch of the trace
    selected: dict[str, Selection]  # the members the trace places
    beyond: list[Invocation]  # their launches lie beyond the trace: it stopped before them
    never: list[Short]  # the application ended first: their launches do not exist
    functions: dict[int, str] = field(default_factory=dict)  # trace ID -> function name ({}: unknown)
    parts: dict[str, FilterParts] = field(default_factory=dict)  # per member, its filters apart
    traced: tuple[TracedLaunch, ...] | None = None  # `every` as Nsight Systems traced it (None: ncu did)

    @property
    def names(self) -> dict[str, str]:
        """Symbol -> function name, for what people read and for ncu's numbering per function."""
        return {launch.symbol: self.functions[launch.id] for launch in self.every if launch.id in self.functions}

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
    found = _listed_trace(ctx, cache, members, gpus, lane, launches)
    if isinstance(found, str):
        return found
    listed, traced, report, info = found
    problem = disagreement(listed)
    if problem is not None:
        return f"the discovery trace's listings disagree ({problem}): nothing is decided on them"
    every = listed[()]
    selections = {m.name: _selection(m, listed[tuple(filter_words(m.options))]) for m in members}
    missed = [s for s in selections.values() if isinstance(s, Short)]
    ended = len(every) < launches
    return TraceSelections(
        info=info,
        report=report,
        every=every,
        selected={name: s for name, s in selections.items() if not isinstance(s, Short)},
        beyond=[] if ended else [short.member for short in missed],
        never=missed if ended else [],
        functions={launch.id: launch.symbol for launch in listed.get(_FUNCTIONS, [])},  # listed by function
        parts=_filter_parts(members, listed, frozenset(launch.id for launch in every)),
        traced=tuple(traced) if traced is not None else None,
    )


def traced_every(launches: list[TracedLaunch], members: Sequence[Invocation], limit: int) -> list[TracedLaunch]:
    """What the trace's own filters select of every launch Nsight Systems recorded, the first `limit`
    (as ncu's trace of the same members holds them)."""
    return trace_holds(launches, trace_options(members, limit))


def nsys_listings(traced: Sequence[TracedLaunch], members: Sequence[Invocation]) -> Listings:
    """The listings list_trace takes from ncu, taken from an Nsight Systems trace's launches (`traced`:
    those the trace's filters select, in order: their IDs)."""
    listed: Listings = {
        (): [as_launch(i, launch) for i, launch in enumerate(traced)],
        _FUNCTIONS: [as_launch(i, launch, by_function=True) for i, launch in enumerate(traced)],
    }
    for words, options in member_listings(members).items():
        if words not in listed:
            listed[words] = [as_launch(i, traced[i]) for i in selected(traced, options)]
    return listed


def member_listings(members: Sequence[Invocation]) -> dict[tuple[str, ...], TargetOptions]:
    """The listings of a trace that its members need, each distinct filter once (as ncu words), with
    options holding just those filters: each member's filters, and its kernel and NVTX filters apart."""
    wanted: dict[tuple[str, ...], TargetOptions] = {}
    for m in members:
        kernels, nvtx = _part_words(m)
        wanted.setdefault(tuple(filter_words(m.options)), m.options)
        wanted.setdefault(kernels, _only(m, "kernel_name", "kernel_name_base"))
        wanted.setdefault(nvtx, _only(m, "nvtx_include", "nvtx_exclude"))
    return wanted


def _listed_trace(
    ctx: RunContext,
    cache: TraceCache,
    members: Sequence[Invocation],
    gpus: tuple[str, ...] | None,
    lane: str | None,
    launches: int,
) -> tuple[Listings, list[TracedLaunch] | None, Path, TraceInfo] | str:
    """The trace and its listings (with what Nsight Systems traced, when it did); a cached ncu trace
    that cannot be listed is dropped and traced again, once."""
    why = "the discovery trace cannot be listed"
    for _ in range(2):
        trace = trace_for(ctx, cache, members, gpus, lane, launches)
        if isinstance(trace, str):
            return trace
        if trace.nsys is not None:  # applied here, as ncu applies them on import (plan/share/nsys_select.py)
            traced = traced_every(trace.nsys, members, launches)
            return nsys_listings(traced, members), traced, trace.report, trace.info
        report, info = trace.report, trace.info
        kept = cache.listings(info.key, report)
        listed = list_trace(ctx, report, members, kept)
        if kept and (isinstance(listed, str) or disagreement(listed) is not None):
            cache.forget_listings(info.key)  # what was kept does not hold: list it all again
            kept = {}
            listed = list_trace(ctx, report, members)
        if not isinstance(listed, str):
            if disagreement(listed) is None and any(words not in kept for words in listed):
                cache.keep_listings(info.key, report, {**kept, **listed})
            return listed, None, report, info
        if not info.reused:
            return listed
        cache.forget(info.key)  # a damaged cache entry
        why = listed
    return why


# The key of the listing of every launch by function name (the others are keyed by their filters).
_FUNCTIONS = ("<function names>",)


def list_trace(
    ctx: RunContext, report: Path, members: Sequence[Invocation], kept: Listings | None = None
) -> Listings | str:
    """Every listing the shared run needs of the trace, each distinct filter once and all at once:
    every launch (under ()), each member's filters, its kernel and NVTX filters apart (the partition
    prices a union's window with them), all by symbol, and every launch by the function name
    --kernel-id numbers launches by (under _FUNCTIONS; left out when ncu cannot list them: then no
    picked windows). `kept`: listings of this trace kept by an earlier run, not listed again. A
    string: the trace cannot be listed."""
    kept = kept or {}
    needed = list(dict.fromkeys([(), _FUNCTIONS, *member_listings(members)]))
    distinct = [words for words in needed if words not in kept]
    ncu, importer = ctx.ncu_path, importer_of(ctx)

    def listing(words: tuple[str, ...]) -> list[Launch] | None:
        with CLOCK.phase(TRACE_LISTING):
            return _listing(words)

    def _listing(words: tuple[str, ...]) -> list[Launch] | None:
        if words == _FUNCTIONS:
            try:
                return list_launches(import_csv_argv(ncu, report, names=FUNCTIONS), importer)
            except ImportFailed:
                return None
        return list_launches(import_csv_argv(ncu, report, list(words), names=SYMBOLS), importer)

    try:
        with ThreadPoolExecutor(IMPORT_WORKERS) as pool, CLOCK.waiting():  # the workers count their own
            found = dict(zip(distinct, pool.map(listing, distinct), strict=True))
    except ImportFailed as exc:
        return f"the discovery trace cannot be listed: {exc}"
    found.update((words, kept[words]) for words in needed if words in kept)
    return {words: launches for words, launches in found.items() if launches is not None}


def disagreement(listed: Listings) -> str | None:
    """Listings of one trace must agree: every launch numbered from 0 without a gap, each filtered
    listing's launches among them as they are, the function names of the same launches."""
    every = {launch.id: launch for launch in listed[()]}
    if sorted(every) != list(range(len(every))):
        return "its launches are not numbered 0 to N-1"
    for words, launches in listed.items():
        if words == _FUNCTIONS:
            if [launch.id for launch in launches] != sorted(every):
                return "the listing by function name holds other launches"
            continue
        odd = next((x for x in launches if x.id not in every or every[x.id].identity != x.identity), None)
        if odd is not None:
            return f"launch {odd.id} with {' '.join(words)} is not the launch listed alone"
    return None


def _selection(member: Invocation, picked: list[Launch]) -> Selection | Short:
    """What the member's filters select (all: the partition prices them) and the launches it wants."""
    o = member.options
    wanted = member_wanted(picked, o.launch_skip or 0, o.launch_count or 1)
    return Short(member, wanted, len(picked)) if isinstance(wanted, str) else (picked, wanted)


def _part_words(member: Invocation) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Its kernel filter and its NVTX filters, each alone, as ncu words."""
    return (
        tuple(filter_words(_only(member, "kernel_name", "kernel_name_base"))),
        tuple(filter_words(_only(member, "nvtx_include", "nvtx_exclude"))),
    )


def _filter_parts(members: Sequence[Invocation], listed: Listings, every: frozenset[int]) -> dict[str, FilterParts]:
    """Per member, what its kernel filter and its NVTX filters select apart (`every`: for a member
    without a kernel filter)."""

    def ids(words: tuple[str, ...]) -> frozenset[int]:
        return frozenset(launch.id for launch in listed[words])

    parts = {}
    for m in members:
        kernels, nvtx = _part_words(m)
        parts[m.name] = FilterParts(
            kernels=ids(kernels) if kernels else every,
            scope=ids(nvtx) if nvtx else None,
            family=(*kernels, "|", *nvtx),
        )
    return parts


def _only(member: Invocation, *keys: str) -> TargetOptions:
    """The member's options with only `keys` set (the others as ncu's defaults)."""
    return TargetOptions.model_construct(**{key: getattr(member.options, key) for key in keys})


def placed_members(members: Sequence[Invocation], found: TraceSelections) -> list[Placed]:
    """The members the trace places, with what their filters select apart (for the union's window)."""
    placed = []
    for m in (m for m in members if m.name in found.selected):
        picked, wanted = found.selected[m.name]
        part = found.parts.get(m.name)
        ids, wanted_ids = tuple(x.id for x in picked), tuple(x.id for x in wanted)
        if part is None:  # priced from its own selection alone
            placed.append(Placed(m, ids, wanted_ids))
        else:
            placed.append(Placed(m, ids, wanted_ids, part.kernels, part.scope, part.family))
    return placed


def member_trace(member: Invocation, found: TraceSelections) -> MemberTrace:
    """What the trace says of `member`, for composing its group (plan/share/group_plan.py)."""
    part = found.parts.get(member.name)
    selected, wanted = found.selected[member.name]
    return MemberTrace(member, tuple(selected), tuple(wanted), part.kernels if part is not None else None)
