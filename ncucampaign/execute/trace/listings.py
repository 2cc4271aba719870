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
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

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
# In every digest: a file kept before its NVTX names were read as they now are (2: a named domain's message no
# longer trails its range, plan/share/launches.py) is listed again, not believed.
LISTING_FORMAT = 2


Index = Annotated[StrictInt, Field(ge=0)]  # an ID, a dimension, or a place in `strings`
Row = tuple[Index, Index, tuple[Index, Index, Index], tuple[Index, Index, Index], list[Index]]


class ListingsFile(BaseModel):
    """<digest>.listings.json: a trace's listings by their filters' words, each launch a row (ID, symbol, grid,
    block, NVTX stack) whose strings are places in `strings`, each string once (a trace repeats its symbols and
    stacks); `stamp`: the report listed; `digest`: of strings and listings, so a file damaged into other valid JSON
    is not believed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stamp: list[int]
    digest: str
    strings: list[StrictStr]
    listings: list[tuple[list[StrictStr], list[Row]]]


def encode(listed: Mapping[tuple[str, ...], list[Launch]], stamp: list[int]) -> ListingsFile:
    """Listings as their file holds them."""
    strings: dict[str, int] = {}

    def ref(text: str) -> int:
        return strings.setdefault(text, len(strings))

    lists = [
        (list(words), [(x.id, ref(x.symbol), x.grid, x.block, [ref(n) for n in x.nvtx]) for x in launches])
        for words, launches in listed.items()
    ]
    table = list(strings)
    return ListingsFile.model_construct(stamp=stamp, digest=_digest(table, lists), strings=table, listings=lists)


def decode(data: object, stamp: list[int]) -> Listings:
    """The listings `encode` wrote for the report whose stamp is `stamp`; {} when they are of another
    file, or anything in them is not what `encode` writes."""
    try:
        kept = ListingsFile.model_validate(data)
    except ValidationError:
        return {}
    if kept.stamp != stamp or kept.digest != _digest(kept.strings, kept.listings):
        return {}
    strings = kept.strings
    try:
        return {
            tuple(words): [
                Launch(i, strings[s], grid, block, tuple(strings[n] for n in nvtx)) for i, s, grid, block, nvtx in rows
            ]
            for words, rows in kept.listings
        }
    except IndexError:
        return {}


def _digest(strings: list[str], lists: Sequence[Any]) -> str:
    return hashlib.sha256(json.dumps([LISTING_FORMAT, strings, lists], separators=(",", ":")).encode()).hexdigest()


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
    write_text_atomic(path, encode(nsys_listings(held, {(): every, BY_FUNCTION: every}), []).model_dump_json())


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
