"""What `ncu --import` listed of a cached discovery trace, kept beside it so that a later run on the
same trace does not list it again: each distinct filter's listing cost 0.6-0.9 s of CPU on the H200
(docs/ncu-behaviour.md, "Shared runs"), on the critical path of every shared run with a cached trace.

A listing is a function of the report and ncu's words (ncu's version is part of the trace's key).
What is kept names the report file it was listed from (device, inode, size, modification time), so a
trace replaced or rewritten is listed again, and carries the digest of its listings, so that a file
damaged into other valid JSON (a launch lost: the trace would seem to end before it) is not believed;
anything unreadable is no listing. Pure.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

from ncucampaign.plan.share.launches import Launch

Listings = dict[tuple[str, ...], list[Launch]]
# The key of the listing of every launch by function name, the names --kernel-id numbers launches by
# (every other listing is keyed by its filters as ncu words; every launch by ()).
BY_FUNCTION = ("<function names>",)


def stamp_of(info: os.stat_result) -> list[int]:
    """The report file a listing was made from."""
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns]


def encode(listed: Mapping[tuple[str, ...], list[Launch]], stamp: list[int]) -> dict[str, Any]:
    """Listings as JSON-ready data, every string once (a trace repeats its symbols, grids and stacks)."""
    strings: dict[str, int] = {}

    def ref(text: str) -> int:
        return strings.setdefault(text, len(strings))

    lists = [
        [list(words), [[x.id, ref(x.symbol), ref(x.grid), ref(x.block), [ref(n) for n in x.nvtx]] for x in launches]]
        for words, launches in listed.items()
    ]
    table = list(strings)
    return {"stamp": stamp, "digest": _digest(table, lists), "strings": table, "listings": lists}


def decode(data: object, stamp: list[int]) -> Listings:
    """The listings `encode` wrote for the report whose stamp is `stamp`; {} when they are of another
    file, or anything in them is not what `encode` writes."""
    if not isinstance(data, dict) or data.get("stamp") != stamp:
        return {}
    strings, lists = data.get("strings"), data.get("listings")
    if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings) or not isinstance(lists, list):
        return {}
    if data.get("digest") != _digest(strings, lists):
        return {}
    try:
        return {_words(words): [_launch(row, strings) for row in rows] for words, rows in lists}
    except (TypeError, ValueError, IndexError):
        return {}


def _digest(strings: list[str], lists: list[Any]) -> str:
    return hashlib.sha256(json.dumps([strings, lists], separators=(",", ":")).encode()).hexdigest()


def _words(words: object) -> tuple[str, ...]:
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise ValueError("words")
    return tuple(words)


def _launch(row: object, strings: list[str]) -> Launch:
    if not isinstance(row, list) or len(row) != 5 or not isinstance(row[4], list):
        raise ValueError("row")
    ident, symbol, grid, block, nvtx = row
    numbers = [ident, symbol, grid, block, *nvtx]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
        raise ValueError("row")
    return Launch(ident, strings[symbol], strings[grid], strings[block], tuple(strings[n] for n in nvtx))


def disagreement(listed: Listings) -> str | None:
    """Listings of one trace must agree: every launch numbered from 0 without a gap, each filtered
    listing's launches among them as they are, the function names of the same launches."""
    every = {launch.id: launch for launch in listed.get((), [])}
    if sorted(every) != list(range(len(every))):
        return "its launches are not numbered 0 to N-1"
    for words, launches in listed.items():
        if words == BY_FUNCTION:
            if [launch.id for launch in launches] != sorted(every):
                return "the listing by function name holds other launches"
            continue
        odd = next((x for x in launches if x.id not in every or every[x.id].identity != x.identity), None)
        if odd is not None:
            return f"launch {odd.id} with {' '.join(words)} is not the launch listed alone"
    return None
