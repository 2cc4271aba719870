"""The status of a target and of each of its attempts (the manifest records these words)."""

from __future__ import annotations

from enum import StrEnum


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
