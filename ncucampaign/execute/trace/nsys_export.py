"""The launches of an Nsight Systems trace, from its SQLite export (`nsys export -t sqlite`, 2025.3.1's tables:
CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME for the API call's time and thread, NVTX_EVENTS type 59
for push/pop ranges), in correlationId order, the order ncu numbers them in (docs/ncu-behaviour.md, "A trace by
Nsight Systems instead"); only those the trace's filters select, up to its launch count. Refused with the
reason: several processes, a named NVTX domain that ncu places its own way, an export unlike its schema (every
value's type is checked; text not UTF-8 is no name). Bounded in bytes, rows and seconds (Bounds); a stop request
ends a read within a fraction of a second (SQLite's progress handler and the loop over rows both look)."""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.plan.share.launches import Launch
from ncucampaign.plan.share.nsys_select import PLACED_ALIKE
from ncucampaign.spec.ncu_grammar import DEFAULT_DOMAIN

_PUSH_POP = 59  # NVTX_EVENTS.eventType of a push/pop range (NvtxPushPopRange)
_DOMAIN_CREATE = 75  # NVTX_EVENTS.eventType of a domain's creation, its name in text (NvtxDomainCreate)
_STEPS = 5_000  # SQLite steps between two looks at the stop request and the clock
_LARGEST_DIM = (1 << 31) - 1  # CUDA's grid and block dimensions are below 2^31


class ExportRefused(Exception):
    """The export cannot stand in for ncu's trace (why)."""


@dataclass(frozen=True)
class Bounds:
    """How much of an export is read before it is refused: its bytes, its kernel rows (before the
    trace holds what it was asked) and NVTX ranges, and its seconds; `stop`: the run's stop request."""

    stop: StopRequest | None = None
    seconds: float = 120.0
    size: int = 8 << 30
    rows: int = 2_000_000
    ranges: int = 2_000_000


def read_export(
    path: Path, holds: Callable[[Launch], bool], limit: int, bounds: Bounds, named: NameTest | None = None
) -> list[Launch]:
    """The launches of the export that `holds` selects, in call order, the first `limit` of them;
    ExportRefused with the reason when it cannot be read, is not what its schema says, goes past a
    bound, or cannot be ordered as ncu orders launches. `named`: the kernel names `holds` can select
    at all (symbol, function); the rows of other kernels are never read."""
    try:
        size = path.stat().st_size
        if size > bounds.size:
            raise ExportRefused(
                f"the Nsight Systems export is {size >> 20} MiB, above the {bounds.size >> 20} MiB read"
            )
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        raise ExportRefused(f"the Nsight Systems export cannot be opened: {exc}") from exc
    reading = _Reading(db, bounds)
    db.set_progress_handler(lambda: 1 if reading.why_stop() else 0, _STEPS)
    try:
        return reading.launches(holds, limit, named)
    except (sqlite3.Error, UnicodeError, ValueError, TypeError, OverflowError) as exc:
        why = reading.why_stop() or f"it cannot be read: {str(exc)[:200] or type(exc).__name__}"
        raise ExportRefused(f"the Nsight Systems export was not read: {why}") from exc
    finally:
        db.close()


Range = tuple[int, int | None, str]  # start, end (None while open), name
NameTest = Callable[[str, str], bool]  # symbol, function -> selected


class _Reading:
    def __init__(self, db: sqlite3.Connection, bounds: Bounds) -> None:
        self.db, self.bounds = db, bounds
        self.deadline = time.monotonic() + bounds.seconds

    def why_stop(self) -> str | None:
        if self.bounds.stop is not None and self.bounds.stop.level:
            return "the run is stopping"
        if time.monotonic() > self.deadline:
            return f"reading it took longer than {self.bounds.seconds:g} s"
        return None

    def look(self, count: int) -> None:
        if count % 1024 == 0 and (why := self.why_stop()) is not None:
            raise ExportRefused(f"the Nsight Systems export was not read: {why}")

    def columns(self, table: str) -> set[str]:
        return {str(row[1]) for row in self.db.execute(f"pragma table_info({table})")}

    def launches(self, holds: Callable[[Launch], bool], limit: int, named: NameTest | None) -> list[Launch]:
        if not self.columns("CUPTI_ACTIVITY_KIND_KERNEL"):
            return []  # no kernel ran: nsys writes no such table
        if len(self.db.execute("select distinct globalPid from CUPTI_ACTIVITY_KIND_KERNEL limit 2").fetchall()) > 1:
            raise ExportRefused("several processes launched kernels, and ncu's order across them is its own")
        calls = [t for t in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER") if self.columns(t)]
        if not calls:
            raise ExportRefused("it holds no CUDA API calls (traced without -t cuda?)")
        either = " union all ".join(f"select correlationId, start, globalTid from {t}" for t in calls)
        api = f"select correlationId, min(start) start, min(globalTid) globalTid from ({either}) group by correlationId"
        rows = self.db.execute(
            "select coalesce(m.value, s.value), s.value, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ,"
            " a.start, a.globalTid from CUPTI_ACTIVITY_KIND_KERNEL k"
            " left join StringIds s on s.id = k.shortName left join StringIds m on m.id = k.mangledName"
            f" left join ({api}) a on a.correlationId = k.correlationId{self.kernels(named)}"
            " order by k.correlationId, k.start"  # the nodes of one graph launch share its call: as they ran
        )
        stacks, held = _Stacks(self.ranges()), list[Launch]()
        for count, row in enumerate(rows, start=1):
            if count > self.bounds.rows:
                raise ExportRefused(f"it holds more than {self.bounds.rows} launches before the trace's {limit}")
            self.look(count)
            symbol, function, when, thread = _names_and_call(row)
            launch = Launch(len(held), symbol, _dims(row[2:5]), _dims(row[5:8]), stacks.at(thread, when), function)
            if holds(launch):
                held.append(launch)
                if len(held) >= limit:
                    break
        return held

    def kernels(self, named: NameTest | None) -> str:
        """A clause that keeps the launches of the kernels `named` can select and leaves out others (an
        application launches few kernels, many times each): by the kernel's short name, whose every
        launch is read when any of its symbols is selected, or when a name is no string (refused then)."""
        if named is None:
            return ""
        pairs = self.db.execute(
            "select distinct k.shortName, coalesce(m.value, s.value), s.value from CUPTI_ACTIVITY_KIND_KERNEL k"
            " left join StringIds s on s.id = k.shortName left join StringIds m on m.id = k.mangledName"
        ).fetchall()
        ids = {short for short, symbol, function in pairs if not isinstance(symbol, str) or not isinstance(
            function, str) or named(symbol, function)}  # fmt: skip
        if not all(_is_int(short) for short in ids):
            return ""  # a short name that is no number: every row is read (and refused)
        return f" where k.shortName in ({','.join(str(short) for short in ids)})"

    def ranges(self) -> dict[int, list[Range]]:
        """Push/pop ranges per thread, by start, each named 'domain:range' as ncu lists it. A named domain that
        ncu places its own way refuses the export (`multirank`: ncu had NCCL's ncclCommInitRankConfig open at every
        launch, nsys at none); those both place alike (PLACED_ALIKE: CUB's CCCL) are read."""
        columns = self.columns("NVTX_EVENTS")
        if not columns:
            return {}
        text = "coalesce(e.text, t.value)" if "textId" in columns else "e.text"
        join = " left join StringIds t on t.id = e.textId" if "textId" in columns else ""
        domain = "coalesce(e.domainId, 0)" if "domainId" in columns else "0"
        names = self.domains(text, join, domain)
        rows = self.db.execute(
            f"select e.start, e.end, {text}, e.globalTid, {domain} from NVTX_EVENTS e{join}"
            f" where e.eventType = {_PUSH_POP} order by e.start limit {self.bounds.ranges + 1}"
        )
        threads: dict[int, list[Range]] = {}
        for count, (start, end, name, thread, domain_id) in enumerate(rows, start=1):
            if count > self.bounds.ranges:
                raise ExportRefused(f"it holds more than {self.bounds.ranges} NVTX ranges")
            self.look(count)
            if not isinstance(name, str):
                raise ExportRefused("it holds an NVTX range without a name")
            if not _is_int(start) or not _is_int(thread) or not (end is None or _is_int(end)):
                raise ExportRefused(f"the NVTX range {name[:80]!r} has a start, end or thread that is no integer")
            threads.setdefault(thread, []).append((start, end, sys.intern(f"{names[domain_id]}:{name}")))
        return threads

    def domains(self, text: str, join: str, domain: str) -> dict[object, str]:
        """The domain of each domain ID that a push/pop range holds, by the name its creation gave it; the
        export refused when one is a domain ncu places its own way, or has no name."""
        names: dict[object, str] = {0: DEFAULT_DOMAIN}
        pushed = f"select distinct {domain} from NVTX_EVENTS e where e.eventType = {_PUSH_POP} and {domain} != 0"
        used = [row[0] for row in self.db.execute(pushed)]
        if not used:
            return names
        create = f"select e.domainId, {text} from NVTX_EVENTS e{join} where e.eventType = {_DOMAIN_CREATE}"
        created = dict(self.db.execute(create).fetchall())
        for domain_id in used:
            name = created.get(domain_id)
            if not isinstance(name, str) or name not in PLACED_ALIKE:
                shown = repr(name[:80]) if isinstance(name, str) else "of no name"
                raise ExportRefused(f"it holds NVTX ranges of the domain {shown}, which ncu places its own way")
            names[domain_id] = name
        return names


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _names_and_call(row: tuple[object, ...]) -> tuple[str, str, int, int]:
    symbol, function, when, thread = row[0], row[1], row[8], row[9]
    if not isinstance(symbol, str) or not isinstance(function, str) or not symbol or not function:
        raise ExportRefused("a launch has no kernel name in the export's strings")
    if when is None or thread is None:
        raise ExportRefused("a launch has no API call to place it on a thread")
    if not isinstance(when, int) or not isinstance(thread, int):
        raise ExportRefused(f"the API call of a launch of {function[:80]!r} has a start or thread that is no integer")
    return sys.intern(symbol), sys.intern(function), when, thread


def _dims(values: Sequence[object]) -> tuple[int, int, int]:
    dims = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= _LARGEST_DIM]
    if len(dims) != 3:
        raise ExportRefused(
            f"a launch has a grid or block of {tuple(values)!r}: dimensions are integers of 1 to 2^31-1"
        )
    return dims[0], dims[1], dims[2]


class _Stacks:
    """The ranges open on a thread when it made a call, bottom first: one sweep per thread, as its calls
    come in the order they were made; one copy of each distinct stack (a trace holds few, many times)."""

    def __init__(self, ranges: dict[int, list[Range]]) -> None:
        self.ranges = ranges
        self.state: dict[int, tuple[int, list[Range], int]] = {}  # thread -> next range, open ranges, last call
        self.same: dict[tuple[str, ...], tuple[str, ...]] = {}

    def at(self, thread: int, when: int) -> tuple[str, ...]:
        pushed = self.ranges.get(thread, [])
        next_range, open_ranges, last = self.state.get(thread, (0, [], when))
        if when < last:
            raise ExportRefused("a thread's API calls are not in the order of their correlation IDs")
        while next_range < len(pushed) and pushed[next_range][0] <= when:
            open_ranges.append(pushed[next_range])
            next_range += 1
        open_ranges = [r for r in open_ranges if r[1] is None or r[1] >= when]
        self.state[thread] = (next_range, open_ranges, when)
        stack = tuple(name for _, _, name in open_ranges)
        return self.same.setdefault(stack, stack)
