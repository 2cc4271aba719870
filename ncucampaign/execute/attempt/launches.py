"""How far an attempt got while it runs: the launches ncu says it profiled, a line each (`==PROF== Profiling
"kernel" - 3: 0%....50%....100% - 10 passes`: the launch is done when its passes are said), out of those it will
profile at most (its --launch-count), and the time left: the launches left at the price list's seconds a launch
(plan/share/cost.py), replaced by this attempt's own once it has profiled MEASURED_AFTER of them. A union of 240
launches at several seconds each is minutes to an hour of one application run: without this, 0% all along."""

from __future__ import annotations

import codecs
import os
import re
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.attempt.stall import StallState
from ncucampaign.execute.rundir.store import open_regular
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.cost import per_launch_s

_LAUNCH = re.compile(r'==PROF== Profiling "[^"]*"')
_DONE = re.compile(r'==PROF== Profiling "[^"]*".*- \d+ pass(?:es)?\s*$')  # "- 1 pass", "- 10 passes"
MEASURED_AFTER = 3  # launches profiled before this attempt's own seconds a launch stand for the price list's
_MAX_LINE = 65536


def profiled_in(console: str) -> int:
    """The launches a console (an attempt's log) says ncu profiled."""
    return sum(1 for line in console.splitlines() if _DONE.search(line))


@dataclass
class LaunchCount:
    """What an attempt's console showed of its launches so far. Pure: `now` is passed in."""

    expected: int | None  # its --launch-count (None: no bound, no estimate)
    priced_s: float  # a launch's replay seconds at the price list's prices
    started: float
    profiled: int = 0
    first_at: float | None = None  # when the first launch began (its Profiling line)
    last_at: float | None = None  # when the latest launch was done
    _pending: str = field(default="", repr=False)

    def feed(self, text: str, now: float) -> None:
        if not text:
            return
        *complete, pending = (self._pending + text).split("\n")
        self._pending = pending[-_MAX_LINE:]
        for line in complete:  # a launch's line is done when it ends: its passes are said
            if _LAUNCH.search(line):
                self.first_at = self.first_at if self.first_at is not None else now
                if _DONE.search(line):
                    self.profiled += 1
                    self.last_at = now
        if _LAUNCH.search(self._pending) and self.first_at is None:
            self.first_at = now

    @property
    def measured(self) -> bool:
        return self.profiled >= MEASURED_AFTER and self.first_at is not None and self.last_at is not None

    def seconds_a_launch(self) -> float:
        """This attempt's own where it has measured them, else the price list's."""
        if self.measured and self.first_at is not None and self.last_at is not None:
            return max(0.0, self.last_at - self.first_at) / self.profiled
        return self.priced_s

    def left_s(self) -> float | None:
        """Seconds left until the last launch it may profile is done (None: no bound to count to)."""
        if self.expected is None:
            return None
        return max(0, self.expected - self.profiled) * self.seconds_a_launch()


def launch_watch(
    inv: Invocation, log_path: Path, offset: int, seen: Callable[[LaunchCount, bool], None]
) -> tuple[Callable[[], str | None] | None, Callable[[], None]]:
    """For one attempt of `inv`: the supervisor's check (attempt_watch), and what to call once it ended (the last of
    its console read, `seen` told it is done)."""
    count = LaunchCount(inv.options.launch_count, per_launch_s(inv.options), time.monotonic())
    watch = attempt_watch(log_path, offset, inv.stall_timeout, count, lambda c, _: seen(c, False))

    def ended() -> None:
        if watch is not None:
            watch()  # what ncu printed last
        seen(count, True)

    return watch, ended


def attempt_watch(
    log_path: Path, offset: int, stall_s: float, count: LaunchCount, seen: Callable[[LaunchCount, float], None]
) -> Callable[[], str | None] | None:
    """The supervisor's check while an attempt runs (execute/process/groups.py): it reads what the attempt appended to
    its log since the last call (one handle, open while the check lives), counts the launches (`seen` is told) and
    says why to stop a replay that cannot finish (stall.py); None when the log cannot be read."""
    try:
        handle = os.fdopen(open_regular(log_path, os.O_RDONLY), "rb")
    except (OSError, EnvironmentProblem):
        return None
    handle.seek(offset)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # a character split across reads
    stall = StallState(stall_s, count.started) if stall_s > 0 else None

    def check() -> str | None:
        now = time.monotonic()
        text = decoder.decode(handle.read(1 << 20))
        count.feed(text, now)
        seen(count, now)
        if stall is None:
            return None
        stall.feed(text, now)
        return stall.reason(now)

    weakref.finalize(check, handle.close)
    return check
