"""The status of a target and of each attempt, and what a shared run is (union, discovery trace, timing pass):
records say so in `kind`, and their names still say it, which is how a manifest older than `kind` is read."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class Status(StrEnum):
    OK = "ok"
    INCOMPLETE = "incomplete"  # fewer results than the launch count asks for
    NO_KERNELS = "no_kernels"  # ncu ran the application and profiled nothing
    USAGE_ERROR = "usage_error"  # ncu rejected its command line; never retried
    APP_FAILED = "app_failed"  # the application exited non-zero or died; the report may exist
    PROFILER_ERROR = "profiler_error"  # ncu itself failed
    TIMED_OUT = "timed_out"
    REPLAY_HANG = "replay_hang"  # stopped early: a kernel's replay waited forever (a collective); never retried
    INTERRUPTED = "interrupted"
    # Target states that are not the outcome of an attempt:
    PENDING = "pending"
    RUNNING = "running"


TRACE_PREFIX = "shared/trace-"
TIMING_PREFIX = "shared/timing-"  # the timing pass (weigh: true): an application run no target shares
SharedRunKind = Literal["union", "trace", "timing"]


def kind_of(name: str) -> SharedRunKind:
    """What a shared run named so is, for manifests written before records said (and for the names
    of the invocations that make them)."""
    if name.startswith(TRACE_PREFIX):
        return "trace"
    return "timing" if name.startswith(TIMING_PREFIX) else "union"
