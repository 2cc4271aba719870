"""Reading the launches of an Nsight Systems trace from its SQLite export (`nsys export -t sqlite`),
and keeping them as JSON in the trace cache.

The export's tables are NVIDIA's (Nsight Systems 2025.3.1, the one inside Nsight Compute 2025.3.1):
CUPTI_ACTIVITY_KIND_KERNEL (a launch: names as StringIds, grid, block, correlationId, globalPid),
CUPTI_ACTIVITY_KIND_RUNTIME (the API call of that correlationId: when, on which thread) and
NVTX_EVENTS (eventType 59: a push/pop range on a thread). Launches are ordered as the application
called them (correlationId), the order ncu numbers them in; docs/ncu-behaviour.md, "A trace by Nsight
Systems instead", compares both traces launch by launch. What this reading cannot order as ncu does
is refused with the reason, and the run traces with ncu: launches of several processes, ranges of a
named NVTX domain. CUDA graphs are traced node by node (`--cuda-graph-trace=node`, by_nsys.py).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from ncucampaign.execute.cache_files import read_cache_text
from ncucampaign.execute.rundir.store import write_text_atomic
from ncucampaign.plan.share.nsys_select import TracedLaunch

MAX_LAUNCHES_FILE = 64 << 20  # a bound on a damaged cache file: about 2,000,000 launches kept
KEPT_FORMAT = 2  # format 1 wrote every launch's names in full; its files read as missing (traced again)
_PUSH_POP = 59  # NVTX_EVENTS.eventType of a push/pop range (NvtxPushPopRange)


class ExportRefused(Exception):
    """The export cannot stand in for ncu's trace (why)."""


def read_export(path: Path) -> list[TracedLaunch]:
    """Every kernel launch the export holds, in call order; ExportRefused with the reason when it
    cannot be read, or cannot be ordered as ncu orders launches."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ExportRefused(f"the Nsight Systems export cannot be opened: {exc}") from exc
    try:
        return _launches(db)
    except sqlite3.Error as exc:
        raise ExportRefused(f"the Nsight Systems export cannot be read: {exc}") from exc
    finally:
        db.close()


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"pragma table_info({table})")}


def _launches(db: sqlite3.Connection) -> list[TracedLaunch]:
    kernel = _columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
    if not kernel:
        return []  # no kernel ran: nsys writes no such table
    if len(db.execute("select distinct globalPid from CUPTI_ACTIVITY_KIND_KERNEL").fetchall()) > 1:
        raise ExportRefused("several processes launched kernels, and ncu's order across them is its own")
    calls = [t for t in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER") if _columns(db, t)]
    if not calls:
        raise ExportRefused("it holds no CUDA API calls (traced without -t cuda?)")
    either = " union all ".join(f"select correlationId, start, globalTid from {t}" for t in calls)
    api = f"select correlationId, min(start) start, min(globalTid) globalTid from ({either}) group by correlationId"
    rows = db.execute(
        "select coalesce(m.value, s.value), s.value, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ,"
        " a.start, a.globalTid from CUPTI_ACTIVITY_KIND_KERNEL k"
        " join StringIds s on s.id = k.shortName left join StringIds m on m.id = k.mangledName"
        f" left join ({api}) a on a.correlationId = k.correlationId"
        " order by k.correlationId, k.start"  # the nodes of one graph launch share its call: as they ran
    ).fetchall()
    if any(row[8] is None for row in rows):
        raise ExportRefused("a launch has no API call to place it on a thread")
    ranges = _ranges(db)
    stacks = _stacks(ranges, [(row[8], row[9]) for row in rows])
    # One copy of each name (interned) and stack (_stacks): a trace holds few of each, many times
    # (400,000 launches of 50 functions took 693 MB to read and keep with a copy per launch, 313 MB).
    return [
        TracedLaunch(
            symbol=sys.intern(str(symbol)),
            function=sys.intern(str(function)),
            grid=(int(gx), int(gy), int(gz)),
            block=(int(bx), int(by), int(bz)),
            nvtx=stack,
        )
        for (symbol, function, gx, gy, gz, bx, by, bz, _, _), stack in zip(rows, stacks, strict=True)
    ]


Range = tuple[int, int | None, str]  # start, end (None while open), name


def _ranges(db: sqlite3.Connection) -> dict[int, list[Range]]:
    """Push/pop ranges per thread, by start. A range of a named domain refuses the export: ncu and nsys
    place them differently (on the zoo's `multirank` ncu listed NCCL's ncclCommInitRankConfig as open
    at every launch, nsys at none; docs/ncu-behaviour.md)."""
    columns = _columns(db, "NVTX_EVENTS")
    if not columns:
        return {}
    if (
        "domainId" in columns
        and db.execute(
            f"select 1 from NVTX_EVENTS where eventType = {_PUSH_POP} and coalesce(domainId, 0) != 0 limit 1"
        ).fetchone()
    ):
        raise ExportRefused("it holds NVTX ranges of a named domain (NCCL's, say), which ncu places its own way")
    text = "coalesce(e.text, t.value)" if "textId" in columns else "e.text"
    join = " left join StringIds t on t.id = e.textId" if "textId" in columns else ""
    rows = db.execute(
        f"select e.start, e.end, {text}, e.globalTid from NVTX_EVENTS e{join}"
        f" where e.eventType = {_PUSH_POP} order by e.start"
    ).fetchall()
    threads: dict[int, list[Range]] = {}
    for start, end, name, thread in rows:
        if name is None:
            raise ExportRefused("it holds an NVTX range without a name")
        threads.setdefault(thread, []).append((start, end, str(name)))
    return threads


def _stacks(ranges: dict[int, list[Range]], calls: list[tuple[int, int]]) -> list[tuple[str, ...]]:
    """The ranges open on each call's thread when it was made, bottom first: one sweep per thread."""
    stacks: list[tuple[str, ...]] = [()] * len(calls)
    same: dict[tuple[str, ...], tuple[str, ...]] = {}  # one copy of each distinct stack
    by_thread: dict[int, list[tuple[int, int]]] = {}
    for index, (when, thread) in enumerate(calls):
        by_thread.setdefault(thread, []).append((when, index))
    for thread, wanted in by_thread.items():
        pushed, open_ranges, next_range = ranges.get(thread, []), [], 0
        for when, index in sorted(wanted):
            while next_range < len(pushed) and pushed[next_range][0] <= when:
                open_ranges.append(pushed[next_range])
                next_range += 1
            open_ranges = [r for r in open_ranges if r[1] is None or r[1] >= when]
            stack = tuple(name for _, _, name in open_ranges)
            stacks[index] = same.setdefault(stack, stack)
    return stacks


def write_launches(path: Path, launches: list[TracedLaunch]) -> None:
    """Whole or not at all; never through a link planted where it goes (store.write_text_atomic).
    Names and NVTX stacks are written once each and launches refer to them by number: a trace runs
    to the application's end, and with every name written out 400,000 launches of 50 functions took
    57 MB, past MAX_LAUNCHES_FILE, so that every later run would have traced again."""
    names: dict[tuple[str, str], int] = {}
    stacks: dict[tuple[str, ...], int] = {}
    rows = [
        [
            names.setdefault((x.symbol, x.function), len(names)),
            *x.grid,
            *x.block,
            stacks.setdefault(x.nvtx, len(stacks)),
        ]
        for x in launches
    ]
    kept = {"format": KEPT_FORMAT, "names": list(names), "stacks": list(stacks), "launches": rows}
    write_text_atomic(path, json.dumps(kept, separators=(",", ":")))


def read_launches(path: Path) -> list[TracedLaunch] | None:
    """What write_launches kept; None when the file is missing, damaged or of another format."""
    text = read_cache_text(path, MAX_LAUNCHES_FILE)
    try:
        kept = json.loads(text) if text is not None else None
        if not isinstance(kept, dict) or kept.get("format") != KEPT_FORMAT:
            return None
        names = [(str(symbol), str(function)) for symbol, function in kept["names"]]
        stacks = [tuple(str(name) for name in stack) for stack in kept["stacks"]]
        launches = []
        for name, gx, gy, gz, bx, by, bz, stack in kept["launches"]:
            if name < 0 or stack < 0:
                raise ValueError("a negative index")
            grid, block = (int(gx), int(gy), int(gz)), (int(bx), int(by), int(bz))
            symbol, function = names[name]
            launches.append(TracedLaunch(symbol, function, grid, block, stacks[stack]))
        return launches
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        return None
