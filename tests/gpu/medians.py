"""The medians of the GPU timing scripts (trace_cost.sh, nsys_trace.sh), one line per way of running.

    python3 tests/gpu/medians.py TIMES WORKLOAD

TIMES holds lines `WORKLOAD WAY SECONDS [NOTE ...]`. The ways `alone` and `nothing` (the application
under ncu with nothing profiled) are printed as they are; every other way also by its seconds beyond
`nothing`, with the notes of its last line (launches profiled, an exit code).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path


def main(times: str, workload: str) -> None:
    rows = [
        line.split() for line in Path(times).read_text().splitlines() if line.split() and line.split()[0] == workload
    ]
    seconds: dict[str, list[float]] = {}
    notes: dict[str, str] = {}
    for row in rows:
        seconds.setdefault(row[1], []).append(float(row[2]))
        notes[row[1]] = " ".join(row[3:])
    nothing = statistics.median(seconds["nothing"])
    for way, values in seconds.items():
        median = statistics.median(values)
        beyond = "" if way in ("alone", "nothing") else f", {median - nothing:+.1f} s beyond nothing profiled"
        note = f"; {notes[way]}" if notes[way] else ""
        print(f"{way:28s} median {median:5.1f} s of {', '.join(f'{v:.1f}' for v in values)}{beyond}{note}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
