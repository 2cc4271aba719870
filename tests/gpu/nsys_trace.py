"""Does an Nsight Systems trace list the launches the discovery trace lists?

    python3 tests/gpu/nsys_trace.py TRACE.ncu-rep EXPORT.sqlite 'UNION REGEX'

Compares, in order, the launches the ncu trace profiled with the kernels `nsys profile -t cuda,nvtx`
recorded whose function name the trace's union regex matches: the symbol (mangled name), grid,
block and NVTX push/pop stack (the ranges open on the launching thread when the launch was called).
Prints the counts and whether every launch is the same; exits 1 when not. Needs `ncu_report`; NVTX
ranges of the default domain only (the zoo's).
"""

from __future__ import annotations

import re
import sqlite3
import sys
from pathlib import Path

from ncucampaign.results.reading.reader import read_results

Launch = tuple[str, tuple[int, ...], tuple[int, ...], tuple[str, ...]]  # symbol, grid, block, NVTX paths


def from_nsys(path: str, union: str) -> tuple[int, list[Launch]]:
    db = sqlite3.connect(path)
    ranges = db.execute("select start, end, text, globalTid from NVTX_EVENTS where eventType = 59").fetchall()
    rows = db.execute(
        "select s.value, coalesce(m.value, s.value), k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ,"
        " r.start, r.globalTid from CUPTI_ACTIVITY_KIND_KERNEL k"
        " join StringIds s on s.id = k.shortName left join StringIds m on m.id = k.mangledName"
        " join CUPTI_ACTIVITY_KIND_RUNTIME r on r.correlationId = k.correlationId"
        " and r.globalTid / 16777216 = k.globalPid / 16777216"  # the same process
        " order by k.globalPid, k.correlationId"  # the order the launches were called in
    ).fetchall()
    matches = re.compile(union)
    launches = []
    for name, symbol, gx, gy, gz, bx, by, bz, called, thread in rows:
        if matches.search(name):
            open_ranges = sorted((s, text) for s, e, text, t in ranges if t == thread and s <= called <= (e or 1 << 62))
            stack = "/".join(text for _, text in open_ranges)  # as the reader writes the default domain's
            launches.append((symbol, (gx, gy, gz), (bx, by, bz), (stack,) if stack else ()))
    return len(rows), launches


def from_ncu(path: str) -> list[Launch]:
    """The trace's launches as the run reads reports (results/reading/reader.py)."""
    return [(r.mangled, r.grid or (), r.block or (), r.nvtx) for r in read_results(Path(path))]


def main(trace: str, export: str, union: str) -> int:
    recorded, nsys = from_nsys(export, union)
    ncu = from_ncu(trace)
    same = nsys == ncu
    print(
        f"  nsys recorded {recorded} kernels, {len(nsys)} of them in the union; the ncu trace profiled {len(ncu)};"
        f" the same symbol, grid, block and NVTX stack in order: {same}"
    )
    if not same:
        first = next((i for i, (x, y) in enumerate(zip(nsys, ncu, strict=False)) if x != y), min(len(nsys), len(ncu)))
        print(f"  first difference at launch {first}: nsys {nsys[first : first + 1]}, ncu {ncu[first : first + 1]}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
