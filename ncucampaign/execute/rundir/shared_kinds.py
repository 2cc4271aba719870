"""What a shared run is: a union profiling its members' launches, a discovery trace, or the timing
pass. Records say so in their `kind`; the names the runs are given still say it too, which is how a
manifest written before `kind` existed is read (and how an invocation's name is told apart). Pure."""

from __future__ import annotations

from typing import Literal

TRACE_PREFIX = "shared/trace-"
TIMING_PREFIX = "shared/timing-"  # the timing pass (weigh: true): an application run no target shares
SharedRunKind = Literal["union", "trace", "timing"]


def kind_of(name: str) -> SharedRunKind:
    """What a shared run named so is, for manifests written before records said (and for the names
    of the invocations that make them)."""
    if name.startswith(TRACE_PREFIX):
        return "trace"
    return "timing" if name.startswith(TIMING_PREFIX) else "union"
