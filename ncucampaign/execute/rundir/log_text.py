"""What of an attempt's log is read back to judge it, bounded: an application may print gigabytes, so past
LOG_TEXT_BYTES only ncu's lines (==PROF==, ==ERROR==, ==WARNING==, its kernel list) and the last TAIL_LINES are
kept, all that execute/attempt/classify.parse_console reads. Decoded leniently."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from typing import BinaryIO

LOG_TEXT_BYTES = 64 << 20  # a log segment up to this size is read whole
TAIL_LINES = 1000  # the application's last lines: its error, when it failed
KEPT_BYTES = 64 << 20  # at most this much of ncu's own lines from a larger segment
LINE_BYTES = 1 << 16
_LISTED = re.compile(rb"^\s*\d+\.\s")  # an item of "Available Kernels:" (classify._AVAILABLE_ITEM)
_NCU_LINE = (b"==PROF==", b"==ERROR==", b"==WARNING==", b"Available Kernels:")


def log_text(handle: BinaryIO, offset: int) -> str:
    """The log from `offset` on: whole when small, else what judging reads of it."""
    handle.seek(0, 2)
    if handle.tell() - offset <= LOG_TEXT_BYTES:
        handle.seek(offset)
        return handle.read().decode(errors="replace")
    handle.seek(offset)
    kept: list[bytes] = []
    kept_bytes, listing = 0, False
    tail: deque[tuple[bytes, bool]] = deque()
    for line in _lines(handle):
        ncu_line = any(marker in line for marker in _NCU_LINE)
        listing = (ncu_line and b"Available Kernels:" in line) or (listing and bool(_LISTED.match(line)))
        tail.append((line, ncu_line or listing))
        if len(tail) > TAIL_LINES:  # leaving the tail: kept only when it is ncu's
            old, ncus = tail.popleft()
            if ncus and kept_bytes < KEPT_BYTES:
                kept.append(old)
                kept_bytes += len(old)
    gap = b"# ncucampaign: the application's output in between was not read (the log is too large)\n"
    return b"".join([*kept, gap, *(line for line, _ in tail)]).decode(errors="replace")


def _lines(handle: BinaryIO) -> Iterator[bytes]:
    """The lines from here on, each at most LINE_BYTES (the rest of a longer one is skipped unread
    into memory: a line of gigabytes is read a piece at a time)."""
    while piece := handle.readline(LINE_BYTES):
        if piece.endswith(b"\n") or len(piece) < LINE_BYTES:
            yield piece
            continue
        yield piece + b"\n"
        while (rest := handle.readline(LINE_BYTES)) and not rest.endswith(b"\n"):
            pass
