"""Listings of a discovery trace, kept beside it so a later run does not list it again (each filter's listing
cost 0.6-0.9 s of CPU on every shared run's critical path). A kept listing names the report it came from
(device, inode, size, mtime) and carries its digest: a rewritten trace is listed again, a file damaged into other
valid JSON is not believed. Nsight Systems' launches are kept alike (keep_launches), with their listings."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ncucampaign.execute.rundir.cache_files import read_cache_text
from ncucampaign.execute.rundir.store import write_text_atomic
from ncucampaign.plan.share.launches import Launch
from ncucampaign.plan.share.nsys_select import as_launch, selected
from ncucampaign.spec.model import TargetOptions

Listings = dict[tuple[str, ...], list[Launch]]
# The key of the listing of every launch by function name, the names --kernel-id numbers launches by
# (every other listing is keyed by its filters as ncu words; every launch by ()).
BY_FUNCTION = ("<function names>",)
# What each listing is asked to hold, by its key: every launch under (), every launch by function
# name under BY_FUNCTION, or what the options' filters (their ncu words: the key) select.
Wanted = Mapping[tuple[str, ...], TargetOptions]
# What ncu listed of a trace is kept up to this size: a bound on a damaged file, far above what
# listings take (each launch is a few integers a listing, its strings kept once: encode).
MAX_LISTINGS_FILE = 32 << 20


def encode(listed: Mapping[tuple[str, ...], list[Launch]], stamp: list[int]) -> dict[str, Any]:
    """Listings as JSON-ready data, every string once (a trace repeats its symbols, grids and stacks)."""
    strings: dict[str, int] = {}

    def ref(text: str) -> int:
        return strings.setdefault(text, len(strings))

    lists = [
        [list(words), [[x.id, ref(x.symbol), list(x.grid), list(x.block), [ref(n) for n in x.nvtx]] for x in launches]]
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
    if not isinstance(grid, list) or not isinstance(block, list) or len(grid) != 3 or len(block) != 3:
        raise ValueError("row")
    numbers = [ident, symbol, *grid, *block, *nvtx]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
        raise ValueError("row")
    return Launch(
        ident,
        strings[symbol],
        (grid[0], grid[1], grid[2]),
        (block[0], block[1], block[2]),
        tuple(strings[n] for n in nvtx),
    )


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


def keep_launches(path: Path, held: Sequence[Launch]) -> None:
    """The launches held, kept as ncu would list them, by symbol and by function name (listings.py:
    each string once, and a digest), whole or not at all and never through a link."""
    every = TargetOptions.model_construct()
    write_text_atomic(path, json.dumps(encode(nsys_listings(held, {(): every, BY_FUNCTION: every}), [])))


def kept_launches(path: Path) -> list[Launch] | None:
    """What keep_launches kept; None when the file is missing, damaged, or not what it writes."""
    text = read_cache_text(path, MAX_LISTINGS_FILE)
    try:
        listed = decode(json.loads(text), []) if text is not None else {}
    except (ValueError, RecursionError):
        return None
    by_symbol, by_function = listed.get(()), listed.get(BY_FUNCTION)
    if by_symbol is None or by_function is None or len(by_symbol) != len(by_function):
        return None
    return [dataclasses.replace(x, function=named.symbol) for x, named in zip(by_symbol, by_function, strict=True)]


def nsys_listings(held: Sequence[Launch], wanted: Wanted) -> Listings:
    """The listings ncu would take of its own trace, taken from the launches an Nsight Systems trace
    holds (in order: their IDs)."""
    listed: Listings = {}
    for words, options in wanted.items():
        if words == ():
            listed[words] = [as_launch(i, launch) for i, launch in enumerate(held)]
        elif words == BY_FUNCTION:
            listed[words] = [as_launch(i, launch, by_function=True) for i, launch in enumerate(held)]
        else:
            listed[words] = [as_launch(i, held[i]) for i in selected(held, options)]
    return listed
