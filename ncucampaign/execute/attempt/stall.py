"""Catch a replay that cannot finish, while the attempt runs: a collective kernel replayed alone waits for its
peers forever (docs/ncu-behaviour.md, "Multi-rank jobs") and ncu only warns "taking more time than expected".
Stopped early on that warning while a collective (NCCL, NVSHMEM) is profiled, when such a kernel prints nothing
new for the stall time, or when nothing at all is printed for the stall time after the warning."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ncucampaign.plan.collectives import REPLAY_WARNING, is_collective

_PROFILING = re.compile(r'==PROF== Profiling "([^"]*)"')
_OTHER_PROF = re.compile(r"==PROF== (?!Profiling)|==ERROR== Failed to profile")
_MAX_LINE = 65536


@dataclass
class StallState:
    """What the console showed so far, and when. Pure: `now` is passed in."""

    stall_s: float
    started: float
    last_output: float = 0.0
    profiling: str | None = None  # the kernel whose "==PROF== Profiling" line is still unfinished
    warned_at: float | None = None
    _pending: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        self.last_output = self.started

    def feed(self, text: str, now: float) -> None:
        if not text:
            return
        self.last_output = now
        *complete, pending = (self._pending + text).split("\n")
        self._pending = pending[-_MAX_LINE:]
        for line in [*complete, pending]:
            self._see(line, now)

    def _see(self, line: str, now: float) -> None:
        if REPLAY_WARNING in line and self.warned_at is None:
            self.warned_at = now
        found = list(_PROFILING.finditer(line))
        if found:  # ncu's progress ("0%....50%....100% - 10 passes") follows on the same line
            self.profiling = None if "passes" in line[found[-1].end() :] else found[-1].group(1)
        elif _OTHER_PROF.search(line):
            self.profiling = None

    def reason(self, now: float) -> str | None:
        """Why the attempt should stop now, or None."""
        if self.stall_s <= 0:
            return None
        quiet = now - self.last_output
        kernel = self.profiling
        if kernel and is_collective(kernel):
            if self.warned_at is not None:
                return (
                    "ncu warned that the workload is taking more time than expected "
                    f'{self.warned_at - self.started:.0f} s into the attempt, while replaying "{kernel}"'
                )
            if quiet >= self.stall_s:
                return f'no progress for {quiet:.0f} s while replaying the collective kernel "{kernel}"'
        elif self.warned_at is not None and quiet >= self.stall_s:
            where = f' while replaying "{kernel}"' if kernel else ""
            return (
                f"ncu warned that the workload is taking more time than expected{where}, "
                f"then printed nothing for {quiet:.0f} s"
            )
        return None
