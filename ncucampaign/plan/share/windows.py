"""A shared run's launch window from the discovery trace, and the verification of its splits. Pure. A result's
ID is the launch's position among the union filter's matches. A contiguous window skips the matches before the
earliest wanted launch and profiles up to the latest, and a member's split skips what its filters select inside
it before its first wanted one; a picked window (`--kernel-id ::regex:NAMES:N1|N2|...`) profiles each function's
launches at the wanted numbers (docs/ncu-behaviour.md, "Shared runs", "Picked windows"). Launches compare by
symbol, grid, block and NVTX stack, never demangled text. A picked window is verified per function, as ncu
selects it: threads interleaving functions otherwise still split; an order that changes a member's own
selection is refused."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.launches import Launch
from ncucampaign.plan.share.union import filter_words, split_argv


@dataclass(frozen=True)
class MemberWindow:
    """Where a member's launches lie in its union's report, for both kinds of window (an
    `int` for one and this for the other, switched on four times). A window from the targets is
    exact by construction (the same filters: the skip alone selects); one from the trace re-applies
    the member's filters on import and its split is verified against the trace."""

    wanted: tuple[Launch, ...]  # the launches a stand-alone run would profile, as the trace lists them
    skip_in_union: int  # the member's --launch-skip when its split is exported from the union report
    # The functions its kernel filter matches in the trace: in a picked window, the launches whose order
    # decides what its split holds (empty: unknown, every launch's order counts).
    selectable: frozenset[str] = frozenset()
    from_trace: bool = True

    def filters(self, member: Invocation) -> list[str]:
        """What the split re-applies: the member's own filters, or none where the union has the same."""
        return filter_words(member.options) if self.from_trace else []


def targets_windows(members: Sequence[Invocation]) -> dict[str, MemberWindow]:
    """Each member's window in a union of identical filters: its skip past the earliest one's."""
    first = min(m.options.launch_skip or 0 for m in members)
    return {m.name: MemberWindow((), (m.options.launch_skip or 0) - first, from_trace=False) for m in members}


def split_command(ncu: str, union_report: Path, member: Invocation, window: MemberWindow, out: Path) -> list[str]:
    """The `ncu --import` that exports a member's launches from its union's report: `plan` prints
    it and the run runs it."""
    count = member.options.launch_count or 1
    return split_argv(ncu, union_report, window.filters(member), window.skip_in_union, count, out)


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
        needs = f"launch {skip + 1}" if count == 1 else f"launches {skip + 1}-{skip + count}"
        return f"its filters select {len(selected)} launch(es) in the discovery trace; it needs {needs}"
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
    """The launches `--kernel-id` with the wanted launches' function names and invocation numbers profiles, up to the
    latest wanted one; None when a launch's function name is unknown. `union_selected`: every launch the union's filter
    selects in the trace from its start; `functions`: trace ID -> function name."""
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
    """What `--kernel-id ::NAMES:NUMBERS` selects among the union's matches `selected` (trace order): every launch
    of a wanted launch's function at a wanted launch's number. Functions are named exactly where the union's regex
    matches others (a GEMM campaign's matches 4 cuBLAS functions, 2 wanted), unless a name holds a ':'."""
    wanted = set(wanted)
    last = max(wanted)
    numbers = invocation_numbers((i for i in selected if i <= last), functions)  # trace order: later ones count none
    picked = {numbers[i] for i in wanted}
    names = {functions[i] for i in wanted}
    # Named only where that narrows the union (it matches other functions) and ':' cannot break the grammar.
    named = any(functions[i] not in names for i in selected) and all(":" not in name for name in names)
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


class WindowMemo:
    """What the members of one union share while their windows are found: the union's profiled IDs, per selection
    (one listing, shared by members with the same filters) how many of its launches the union profiled before each
    place, and per kernel filter the functions it selects. 10,000 members each counted and named their own."""

    def __init__(self, union: UnionWindow) -> None:
        self.profiled = frozenset(launch.id for launch in union.launches)
        self._before: dict[int, list[int]] = {}
        self._selectable: dict[int, frozenset[str]] = {}

    def before(self, selected: Sequence[Launch], skip: int) -> int:
        counts = self._before.get(id(selected))
        if counts is None:
            counts, found = [0], 0
            for launch in selected:
                found += launch.id in self.profiled
                counts.append(found)
            self._before[id(selected)] = counts
        return counts[min(skip, len(selected))]

    def selectable(
        self, selected: Sequence[Launch], kernel_ids: Iterable[int] | None, functions: Mapping[int, str] | None
    ) -> frozenset[str]:
        """The functions the member's kernel filter selects (`kernel_ids`, else `selected`); empty: unknown."""
        key = id(kernel_ids if kernel_ids is not None else selected)  # objects the caller holds while this lives
        if key not in self._selectable:
            ids = list(kernel_ids) if kernel_ids is not None else [launch.id for launch in selected]
            known = bool(functions) and functions is not None and all(i in functions for i in ids)
            self._selectable[key] = frozenset(functions[i] for i in ids) if known and functions else frozenset()
        return self._selectable[key]


def member_window(
    selected: Sequence[Launch],
    skip: int,
    wanted: tuple[Launch, ...],
    union: UnionWindow,
    functions: Mapping[int, str] | None = None,
    kernel_ids: Iterable[int] | None = None,
    memo: WindowMemo | None = None,
) -> MemberWindow:
    """In the union's report, the member's filters select what they select in the trace and the union
    profiled: its skip there counts those before its first wanted launch. `functions`: trace ID ->
    function name; `kernel_ids`: the trace IDs its kernel filter alone selects (None: `selected`); `memo`: what
    the union's members share (made here when not given)."""
    memo = memo or WindowMemo(union)
    return MemberWindow(wanted, memo.before(selected, skip), memo.selectable(selected, kernel_ids, functions))


def uncovered(wanted: Sequence[Launch], union: UnionWindow) -> Launch | None:
    """A wanted launch the union would not profile (its filter is not a superset), or None."""
    ids = {launch.id for launch in union.launches}
    return next((launch for launch in wanted if launch.id not in ids), None)


@dataclass(frozen=True)
class Refusal:
    """Why a split was not used: in function names for the reason line, and with the symbols."""

    reason: str
    detail: str = ""  # the same with every kernel's symbol (kept in the manifest)


def verify_against_trace(
    profiled: Sequence[Launch], union: UnionWindow, member: MemberWindow, names: Mapping[str, str]
) -> Refusal | None:
    """None when the union run profiled what the trace says as far as the member's split depends on it: then the split
    selects exactly its wanted launches. Otherwise what differs. `names`: symbol -> function name (the trace's)."""
    if not union.invocations or not member.selectable:
        return _same_order(profiled, union.launches, member.wanted, names, "")
    expected, known = _by_function(union.launches, names), set(names.values())
    for function, launches in _by_function(profiled, names).items():
        if function not in member.selectable and function in known:
            continue  # its filters select none of these launches: their order cannot move its split
        refusal = _same_order(launches, expected.get(function, ()), (), names, f" of {function}")
        if refusal is not None:
            return refusal
    mine = [launch for launch in profiled if names.get(launch.symbol) in member.selectable]
    theirs = [launch for launch in union.launches if names.get(launch.symbol) in member.selectable]
    return _same_order(mine, theirs, member.wanted, names, " of the kernels it selects")


def _by_function(launches: Sequence[Launch], names: Mapping[str, str]) -> dict[str, list[Launch]]:
    """Launches by function name; a symbol the trace never listed is a function of its own."""
    grouped: dict[str, list[Launch]] = {}
    for launch in launches:
        grouped.setdefault(names.get(launch.symbol) or f"<{launch.symbol}>", []).append(launch)
    return grouped


def _same_order(
    profiled: Sequence[Launch],
    expected: Sequence[Launch],
    wanted: Sequence[Launch],
    names: Mapping[str, str],
    scope: str,
) -> Refusal | None:
    """The profiled launches are the expected ones, in order: up to the last of `wanted` (all of it
    when `wanted` is empty, as far as both go). `scope`: which launches these are, for the reason."""
    if wanted:
        positions = {launch.id: index for index, launch in enumerate(expected)}
        last = max(positions[launch.id] for launch in wanted)
        if len(profiled) <= last:
            return Refusal(
                f"the shared run profiled {len(profiled)} launches{scope}; "
                f"the trace says {last + 1} lead to this target's last"
            )
        count = last + 1
    else:
        count = min(len(profiled), len(expected))
        if profiled and not expected:
            first = profiled[0]
            return Refusal(
                f"the shared run profiled {first.describe(names)}, which the trace does not list there",
                f"the shared run profiled {first.describe(full=True)}, which the trace does not list there",
            )
    for index in range(count):
        if profiled[index].identity != expected[index].identity:
            got, trace = profiled[index], expected[index]
            return Refusal(
                f"the shared run's launch {index + 1}{scope} is {got.describe(names)}, "
                f"the trace says {trace.describe(names)}",
                f"the shared run's launch {index + 1}{scope} is {got.describe(full=True)}, "
                f"the trace says {trace.describe(full=True)}",
            )
    return None


def verified_text(member: MemberWindow, union: UnionWindow | None = None) -> str:
    ids = ", ".join(str(launch.id) for launch in member.wanted[:8]) + (", ..." if len(member.wanted) > 8 else "")
    if union is not None and union.invocations and member.selectable:
        order = (
            "each function's launches in the shared run as the trace lists them, its own kernels' in the trace's order"
        )
    else:
        order = "every launch before them in the shared run as the trace says"
    return (
        f"{len(member.wanted)} launch(es) with the kernel symbol, grid, block and NVTX stack the discovery trace "
        f"lists at launch index {ids}, and {order}"
    )
