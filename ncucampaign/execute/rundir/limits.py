"""How large a manifest (or its journal) its readers take: 256 MiB, or NCUCAMPAIGN_MAX_MANIFEST_MIB's MiB. The bound
keeps a damaged or planted file from filling memory (a reader holds several times the file while it validates);
a real run can pass it (tens of thousands of targets with many results each: a result with its findings is 1-2 KB,
more with PM-sampling timelines), so the run that wrote more says so at its end, naming the variable, and a reader
that refuses one names it too. Pure but for the environment it reads."""

from __future__ import annotations

import math
import os

from ncucampaign.errors import UsageError

VARIABLE = "NCUCAMPAIGN_MAX_MANIFEST_MIB"
DEFAULT_MIB = 256
MOST_MIB = 1 << 20  # a TiB: beyond any memory a reader has


def manifest_limit() -> int:
    """The bytes a manifest or journal may hold to be read."""
    text = os.environ.get(VARIABLE, "").strip()
    if not text:
        return DEFAULT_MIB << 20
    if not (text.isascii() and text.isdigit() and len(text) <= 8 and 1 <= int(text) <= MOST_MIB):
        raise UsageError(f"{VARIABLE}={text[:40]!r}: a whole number of MiB, 1 to {MOST_MIB} (default {DEFAULT_MIB})")
    return int(text) << 20


def raise_to(size: int) -> str:
    """What reads a file of `size` bytes: `NCUCAMPAIGN_MAX_MANIFEST_MIB=N`."""
    return f"{VARIABLE}={max(1, math.ceil(size / 2**20))}"


def too_large(size: int, limit: int) -> str:
    """Why a file of `size` bytes is not read, and what would read it."""
    return (
        f"{size / 2**20:,.0f} MiB, more than the {limit >> 20} MiB its readers take ({raise_to(size)} reads it, "
        "with memory for several times that)"
    )


def over_limit_note(size: int) -> str | None:
    """A run's closing note when the manifest it wrote is larger than its readers take by default."""
    limit = manifest_limit()
    if size <= limit:
        return None
    return f"note: this manifest is {too_large(size, limit)}: set it for summarize, report, compare and --resume"
