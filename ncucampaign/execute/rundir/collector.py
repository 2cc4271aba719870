"""Python's garbage collector paused while big manifests are parsed. Pure (no files)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a manifest is parsed and validated: a manifest
    of 20,000 targets is about two million containers, none in a cycle, and the collections their
    allocation triggers took two thirds of the time (load 5.5 s, 1.5 s without them)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
