"""Which invocations share one application run (docs/ncu-behaviour.md, "Shared runs"). Pure. Targets share only
when all that changes how the application runs under ncu is identical (the group key); they differ only in
import-capable filters, the window and what is collected. The window comes from the targets when their filters
are identical, else from a cheap discovery trace; a target stays out of a group it would make dearer."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.cost import (
    UNION_LAUNCHES,
    alone_seconds,
    collection_s,
    group_seconds,
    trace_pays,
    union_timeout,
)
from ncucampaign.plan.share.union import (
    SET_ORDER,
    Window,
    collects_default_set,
    renamed,
    union_launches,
    union_options,
    with_options,
)
from ncucampaign.spec.keys import field_name
from ncucampaign.spec.model import TargetOptions
from ncucampaign.spec.ncu_catalog import InstalledNcu
from ncucampaign.spec.roles import GROUP_KEY_OPTIONS, MEMBER_FILTERS

# Options identical between members (spec/roles.py: all but the import-capable filters, the window and
# the collection; `set` is compared only outside basic < detailed < full), and the filters that may differ.
_KEY_FIELDS = tuple(field_name(key) for key in GROUP_KEY_OPTIONS)
_FILTER_FIELDS = tuple(field_name(key) for key in MEMBER_FILTERS)


@dataclass(frozen=True)
class SharedGroup:
    """Members profiled by one application run of `union`, each then split out of its report."""

    number: int
    members: tuple[Invocation, ...]
    union: Invocation  # its window is final for "targets"; for "trace" it is set at run time
    window: Window

    @property
    def name(self) -> str:
        return shared_run_name(self.number)


@dataclass(frozen=True)
class SharePlan:
    groups: tuple[SharedGroup, ...]
    alone: tuple[tuple[Invocation, str], ...]  # with the reason it runs alone


def unlisted_collection(options: TargetOptions, installed: InstalledNcu) -> str | None:
    """A section or set the installed ncu does not list: a union asking for it is refused whole."""
    sections = [s for s in options.sections or () if not s.startswith("regex:") and s not in installed.sections]
    if sections:
        return f"section {sections[0]!r} is not one the installed ncu lists: it runs alone, so it fails alone"
    if options.section_set is not None and options.section_set not in installed.sets:
        return f"set {options.section_set!r} is not one the installed ncu lists: it runs alone, so it fails alone"
    return None


def alone_reason(inv: Invocation, installed: InstalledNcu | None = None) -> str | None:
    """Why an invocation can never share a run (None: it may). `installed`: what the ncu that will
    run lists (None: not known, e.g. for `plan`)."""
    o = inv.options
    if o.share == "off":
        return "share: off"
    if o.launch_count is None:
        return "no launch_count: its window has no end"
    if o.kernel_id is not None:
        return "kernel_id cannot be re-applied on import"
    if o.extra_args:
        return "extra_args may change how the application runs"
    if o.launch_skip_before_match is not None:
        return "launch_skip_before_match counts the launches of every kernel, which a shared run does not see"
    if o.filter_mode not in (None, "global"):
        return f"filter_mode {o.filter_mode} counts launches per group"
    if o.replay_mode not in (None, "kernel"):
        return f"replay_mode {o.replay_mode} profiles ranges, not launches"
    if o.graph_profiling == "graph":
        return "graph_profiling graph profiles whole graphs"
    return unlisted_collection(o, installed) if installed is not None else None


def group_key(inv: Invocation) -> tuple[object, ...]:
    o = inv.options
    chained = o.section_set is None or o.section_set in SET_ORDER
    values = o.__dict__
    settings = tuple(values[field] for field in _KEY_FIELDS)
    run = (
        inv.app_argv,
        inv.env,
        str(inv.cwd),
        inv.timeout,
        inv.retries,
        inv.retry_delay,
        inv.stop_grace,
        inv.stall_timeout,
    )
    return (run, settings, None if chained else o.section_set)


def filter_signature(inv: Invocation) -> tuple[object, ...]:
    values = inv.options.__dict__
    return tuple(values[field] for field in _FILTER_FIELDS)


def trace_possible(inv: Invocation) -> bool:
    """A trace's launch indices count every launch of the run: only filters that do not change which
    launches ncu sees may differ between members (docs/ncu-behaviour.md, "Shared runs")."""
    o = inv.options
    return (
        o.range_filter is None
        and o.profile_from_start is not False
        and o.devices is None
        and o.target_processes_filter is None
        and o.graph_profiling is None
    )


# --- grouping -----------------------------------------------------------------------------------------


def share_plan(
    invocations: Sequence[Invocation],
    enabled: bool = True,
    installed: InstalledNcu | None = None,
    refused: Mapping[str, str] | None = None,
) -> SharePlan:
    """Groups of invocations that share a run, and the rest with why each runs alone. Targets whose filters
    differ make one group per pool of identical settings, one trace, partitioned by cost at run time. `refused`:
    invocations validate refuses (and why): never in a trace or a group."""
    refused = refused or {}
    if not enabled:
        return SharePlan((), tuple((inv, refused.get(inv.name) or "sharing is off for this run (--no-share)")
                                   for inv in invocations))  # fmt: skip
    alone: dict[str, str] = {}
    pools: dict[tuple[object, ...], list[Invocation]] = {}
    for inv in invocations:
        why = refused.get(inv.name) or alone_reason(inv, installed)
        if why:
            alone[inv.name] = why
            continue
        key = group_key(inv)
        if not trace_possible(inv):  # filters must then be identical: the window comes from the targets
            key = (*key, filter_signature(inv))
        pools.setdefault(key, []).append(inv)
    pool_sizes = {inv.name: len(pool) for pool in pools.values() for inv in pool}
    found: list[tuple[list[Invocation], Window]] = []
    for pool in pools.values():
        if len({filter_signature(m) for m in pool}) == 1:
            found.extend((members, "targets") for members in _by_cost(pool, "targets"))
        else:
            found.append((pool, "trace"))
    groups: list[SharedGroup] = []
    for members, window in found:
        if len(members) < 2 or (window == "trace" and not trace_pays(members)):
            alone.update({m.name: _single_reason(pool_sizes, m) for m in members})
            continue
        groups.append(_group(len(groups) + 1, members, window))
    rest = tuple((inv, alone[inv.name]) for inv in invocations if inv.name in alone)
    return SharePlan(tuple(groups), rest)


def _single_reason(pool_sizes: dict[str, int], inv: Invocation) -> str:
    if pool_sizes[inv.name] == 1:
        return "no other target has the same run settings"
    return "sharing would cost more than its own run"


def _by_cost(pool: list[Invocation], window: Window) -> list[list[Invocation]]:
    """Greedy: each member joins the first group it makes cheaper than running alone."""
    groups: list[_Tally] = []
    for inv in pool:
        for tally in groups:
            if tally.fits(inv) and tally.seconds(inv) - tally.seconds() < alone_seconds(inv):
                tally.add(inv)
                break
        else:
            groups.append(_Tally(window, inv))
    return [tally.members for tally in groups]


class _Tally:
    """A group's cost inputs, kept up to date as members join (grouping stays linear in the targets;
    `group_s` computes the same from the members)."""

    def __init__(self, window: Window, first: Invocation) -> None:
        self.window, self.members = window, [first]
        self.low = self.high = self.total = 0
        self.sets: set[str] = set()
        self.sections: set[str] = set()
        self.metrics = False
        self.low = first.options.launch_skip or 0
        self._count(first)

    def _count(self, inv: Invocation) -> None:
        o = inv.options
        skip, count = o.launch_skip or 0, o.launch_count or 1
        self.low, self.high, self.total = min(self.low, skip), max(self.high, skip + count), self.total + skip + count
        self.sets |= {o.section_set} if o.section_set else ({"basic"} if collects_default_set(o) else set())
        self.sections |= set(o.sections or ())
        self.metrics = self.metrics or bool(o.metrics)

    def add(self, inv: Invocation) -> None:
        self.members.append(inv)
        self._count(inv)

    def fits(self, extra: Invocation) -> bool:
        """Whether the union with `extra` profiles at most what a union may (plan/share/cost.py)."""
        tally = self._with(extra)
        return (tally.high - tally.low if self.window == "targets" else tally.total) <= UNION_LAUNCHES

    def chosen(self) -> str | None:
        return max(self.sets, key=lambda s: SET_ORDER.index(s) if s in SET_ORDER else -1) if self.sets else None

    def _with(self, extra: Invocation) -> _Tally:
        tally = _Tally.__new__(_Tally)
        tally.__dict__.update(self.__dict__, members=[], sets=set(self.sets), sections=set(self.sections))
        tally._count(extra)
        return tally

    def seconds(self, extra: Invocation | None = None) -> float:
        tally = self
        if extra is not None:
            tally = self._with(extra)
        launches = tally.high - tally.low if self.window == "targets" else tally.total
        members = len(self.members) + (extra is not None)
        return group_seconds(launches * collection_s(tally.chosen(), tally.sections, tally.metrics), members)


def union_for(members: Sequence[Invocation], window: Window) -> Invocation:
    """What one application run of `members` profiles: their union filter and collection; for a
    "targets" window also the window (a "trace" window is set from the trace at run time)."""
    union = dataclasses.replace(members[0], options=union_options(members, with_nvtx=window == "trace"))
    if window == "targets":
        skip = min(m.options.launch_skip or 0 for m in members)
        launches = union_launches(members, window)
        union = with_options(union, launch_skip=skip or None, launch_count=launches)
        union = dataclasses.replace(union, timeout=union_timeout(members, union, launches))
    return union


def _group(number: int, members: list[Invocation], window: Window) -> SharedGroup:
    return SharedGroup(number, tuple(members), renamed(union_for(members, window), shared_run_name(number)), window)


def shared_run_name(number: int, prefix: str = "shared/") -> str:
    """The Nth union of a run, as `plan` prints it and the run's record book names it (a Slurm task's
    book: "shared/<job>_<task>-N")."""
    return f"{prefix}{number}"
