"""A shared run's launch window from the discovery trace, and the verification of its splits. Pure.

The trace profiled every launch the group's union filter matches, so a result's ID in it is the
launch's position among those matches. For each member, ncu lists the launches its own filters
select in the trace; the union run (the same filter) then skips the matches before the earliest
wanted one (--launch-skip) and profiles exactly the matches up to the latest wanted one. A member's
split skips the launches its filters select inside that window before its first wanted one
(docs/ncu-behaviour.md, "Shared runs").

A picked window profiles fewer: `--kernel-id ::regex:NAMES:N1|N2|...` selects the Nth launches of each
kernel function (numbered per function name among the launches that pass the NVTX filter, as
measured on ncu 2025.3.1; docs/ncu-behaviour.md, "Picked windows"), so the union profiles every
function's launches at the wanted launches' numbers instead of every match in between.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ncucampaign.execute.shared.imports import Launch


@dataclass(frozen=True)
class MemberWindow:
    wanted: tuple[Launch, ...]  # the launches a stand-alone run would profile, as the trace lists them
    skip_in_union: int  # the member's --launch-skip when its split is exported from the union report


@dataclass(frozen=True)
class UnionWindow:
    skip: int  # --launch-skip of the union run: its filter's matches before the earliest wanted launch
    launches: tuple[Launch, ...]  # what the union run will profile, as the trace lists them
    first_id: int = 0  # the trace ID of the earliest wanted launch
    invocations: tuple[int, ...] = ()  # a picked window's invocation numbers (empty: every match)
    functions: tuple[str, ...] = ()  # a picked window's function names (empty: every the filter matches)


def member_wanted(selected: Sequence[Launch], skip: int, count: int) -> tuple[Launch, ...] | str:
    """The wanted launches among the first skip+count the member's filters select in the trace, or why
    the trace cannot say."""
    if len(selected) < skip + count:
        return (
            f"its filters select {len(selected)} launch(es) in the discovery trace; "
            f"it needs launches {skip + 1}-{skip + count}"
        )
    return tuple(selected[skip : skip + count])


def union_window(union_selected: Sequence[Launch], wanted: Sequence[Sequence[Launch]]) -> UnionWindow:
    """`union_selected`: what the union's filter selects in the trace (the trace's own filter, or a
    narrower group's), in trace order."""
    first = min(launches[0].id for launches in wanted)
    last = max(launches[-1].id for launches in wanted)
    inside = tuple(launch for launch in union_selected if first <= launch.id <= last)
    before = sum(1 for launch in union_selected if launch.id < first)
    return UnionWindow(before, inside, first)


def picked_window(
    union_selected: Sequence[Launch], wanted: Sequence[Sequence[Launch]], functions: Mapping[int, str]
) -> UnionWindow | None:
    """The launches `--kernel-id` with the wanted launches' function names and invocation numbers
    profiles, up to the latest wanted one; None when a launch's function name is unknown.
    `union_selected`: every launch the union's filter selects in the trace from its start;
    `functions`: trace ID -> function name."""
    if any(launch.id not in functions for launch in union_selected):
        return None
    wanted_ids = {launch.id for launches in wanted for launch in launches}
    chosen = picked_ids([launch.id for launch in union_selected], wanted_ids, functions)
    launches = tuple(x for x in union_selected if x.id in chosen.ids)
    return UnionWindow(0, launches, min(wanted_ids), chosen.invocations, chosen.functions)


@dataclass(frozen=True)
class Picks:
    ids: frozenset[int]  # the trace IDs `--kernel-id` selects, up to the latest wanted launch
    invocations: tuple[int, ...]
    functions: tuple[str, ...]  # empty: the union's own kernel filter names the functions


def picked_ids(selected: Sequence[int], wanted: Iterable[int], functions: Mapping[int, str]) -> Picks:
    """What `--kernel-id ::NAMES:NUMBERS` selects among the union's matches `selected` (trace order):
    every launch of a wanted launch's function whose number is a wanted launch's number. The
    functions are named exactly (not every function the union's regex matches: a GEMM campaign's
    regex matches 4 cuBLAS functions where 2 are wanted), where the union matches others and unless
    a name cannot be written in --kernel-id's grammar (a ':')."""
    numbers = invocation_numbers(selected, functions)
    wanted = set(wanted)
    picked = {numbers[i] for i in wanted}
    names = {functions[i] for i in wanted}
    # Named only where that narrows the union (it matches other functions) and ':' cannot break the grammar.
    named = any(functions[i] not in names for i in selected) and all(":" not in name for name in names)
    last = max(wanted)
    ids = frozenset(i for i in selected if i <= last and numbers[i] in picked and (not named or functions[i] in names))
    return Picks(ids, tuple(sorted(picked)), tuple(sorted(names)) if named else ())


def invocation_numbers(ids: Iterable[int], functions: Mapping[int, str]) -> dict[int, int]:
    """Trace ID -> the launch's number among the launches of its function (from 1), in trace order."""
    seen: Counter[str] = Counter()
    numbers = {}
    for launch_id in ids:
        seen[functions[launch_id]] += 1
        numbers[launch_id] = seen[functions[launch_id]]
    return numbers


def member_window(
    selected: Sequence[Launch], skip: int, wanted: tuple[Launch, ...], union: UnionWindow
) -> MemberWindow:
    """In the union's report, the member's filters select what they select in the trace and the union
    profiled: its skip there counts those before its first wanted launch."""
    profiled = {launch.id for launch in union.launches}
    before = sum(1 for launch in selected[:skip] if launch.id in profiled)
    return MemberWindow(wanted, before)


def uncovered(wanted: Sequence[Launch], union: UnionWindow) -> Launch | None:
    """A wanted launch the union would not profile (its filter is not a superset), or None."""
    ids = {launch.id for launch in union.launches}
    return next((launch for launch in wanted if launch.id not in ids), None)


def verify_against_trace(profiled: Sequence[Launch], union: UnionWindow, member: MemberWindow) -> str | None:
    """None when the union run profiled what the trace says up to the member's last launch: then its
    split selects exactly its wanted launches. Otherwise what differs."""
    positions = {launch.id: index for index, launch in enumerate(union.launches)}
    last = max(positions[launch.id] for launch in member.wanted)
    if len(profiled) <= last:
        return f"the shared run profiled {len(profiled)} launches; the trace says {last + 1} lead to this target's last"
    for index in range(last + 1):
        if profiled[index].identity != union.launches[index].identity:
            return (
                f"the shared run's launch {index + 1} is {profiled[index].describe()}, "
                f"the trace says {union.launches[index].describe()}"
            )
    return None


def verified_text(member: MemberWindow) -> str:
    ids = ", ".join(str(launch.id) for launch in member.wanted[:8]) + (", ..." if len(member.wanted) > 8 else "")
    return (
        f"{len(member.wanted)} launch(es) with the kernel, grid, block and NVTX stack the discovery trace "
        f"lists at launch index {ids}, and every launch before them in the shared run as the trace says"
    )
