"""What every tracer of a shared run's discovery trace does (ncu's, by_ncu.py; Nsight Systems', by_nsys.py: one
table, tracers.py), and the values it is handed and hands back. Their shared guarantees (no damaged or empty
trace taken, a kept file believed only with stamp and digest, work folders removed) are kept once in tracers.py;
tests/execute/test_tracer_contract.py runs each case against every tracer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.rundir.manifest import SharedRunRecord, TraceInfo
from ncucampaign.execute.rundir.status import TRACE_PREFIX
from ncucampaign.execute.trace.cache.store import TraceCache, TraceKey
from ncucampaign.execute.trace.listings import Listings, Wanted
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.launches import Launch


def trace_name(key: TraceKey) -> str:
    """The name of a trace's record (and log) in the run: its key's."""
    return f"{TRACE_PREFIX}{key.short}"


@dataclass(frozen=True)
class TraceAsk:
    """What a discovery trace is asked, the same for every tracer: the trace's own invocation (its filters select the
    launches it holds, its launch count how many), the members whose filters are listed in it, where it runs, and the
    key of what it depends on (cache.py: the command, the environment, the workload, ncu and the GPU model)."""

    trace: Invocation
    members: tuple[Invocation, ...]
    gpus: tuple[str, ...] | None
    lane: str | None
    key: TraceKey
    declined: str = ""  # why tracers that could run here cannot stand in for this one (its record says so)
    pinned: TraceInfo | None = None  # the trace this run took of it in another task (a batch pool's first): that one

    @property
    def launches(self) -> int:
        return self.trace.options.launch_count or 0


@dataclass(frozen=True)
class Kept:
    """A trace a tracer can list: the file that keeps it, and the launches the tracer read of it while taking it
    (None: read from the file when listed, as for a trace kept by an earlier run)."""

    path: Path
    digest: str  # its key's digest, under which the cache keeps it (and what is listed of it)
    launches: tuple[Launch, ...] | None = None


@dataclass(frozen=True)
class Readiness:
    """Whether a tracer can take traces on this machine (doctor): what to say, and the fix ("" where
    nothing is to be mended: a tracer turned off on purpose)."""

    ready: bool
    said: str
    fix: str = ""


@dataclass(frozen=True)
class Taken:
    """A trace just taken: the file it keeps, its record in the manifest, and how long it ran."""

    kept: Kept
    record: SharedRunRecord
    seconds: float
    cut: bool = False  # stopped by its timeout before its end: it holds what ran until then, and no more is known


class Tracer(Protocol):
    name: str  # as the manifest's trace info names it ("ncu", "nsys"): for people and records only
    label: str  # for people: "ncu", "Nsight Systems"
    launch_s: float  # seconds a traced launch adds to the application's start (what the limit prices)
    stops_at_count: bool  # the application stops where its trace holds its launch count (ncu: --kill yes), so such
    # a trace's seconds are no whole start of the application (results/limit.py)
    needs_confirming: bool  # its listing is not ncu's own: a member it selects nothing of is closed
    # no_kernels on it only once splits verified against it (ncu's own runs) confirm it

    def readiness(self, ncu_path: str, environ: Mapping[str, str]) -> Readiness:
        """Whether it can take traces here at all (a trace may still refuse it: stand_in)."""
        ...

    def stand_in(self, ask: TraceAsk, ncu_path: str) -> TraceKey | str:
        """The key its trace of `ask` is kept under here, or why it cannot stand in for ncu's trace."""
        ...

    def take(self, ctx: RunContext, ask: TraceAsk, key: TraceKey, work: Path) -> Taken | str:
        """Run the trace now, as the shared run `trace_name(key)` recorded in the manifest, with a work
        folder of its own (removed after it): what it keeps and its record, or why there is none."""
        ...

    def listings(self, ctx: RunContext, cache: TraceCache, kept: Kept, wanted: Wanted) -> Listings | str:
        """What ncu would list of the trace for each wanted key: launches numbered as ncu numbers its
        own trace's; or why the trace cannot be listed. BY_FUNCTION may be left out (no names)."""
        ...
