"""compare's lines at any size: a note said of many targets in the same words is said once, with the targets it
names shortened ('warning: SM frequency ... not comparable (t0[0], t1[0] ... t19999[0], 20000 targets)'), and a table
shows at most so many rows. Pure; JSON, JUnit and Markdown keep every line."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ncucampaign.plan.share.text import short_names

FOLD_AT = 3  # the same words said of at least this many targets are one line
LISTED = 40  # rows a table shows without --all

# What compare says of a target: 'NAME: words', 'NAME[2]: words', each perhaps after 'warning: '. A name out of a
# campaign never holds ': ' (spec/model.py NAME_PATTERN); a line that does not read so is shown as it is.
_SAID_OF = re.compile(r"(?P<lead>warning: )?(?P<name>(?!warning:)[^\s:\[]+(?:\[\d+\])?): (?P<words>.+)", re.DOTALL)


def folded_lines(lines: Sequence[str]) -> list[str]:
    """`lines` in their order, those of the same words about FOLD_AT or more targets as one line where the first
    of them was."""
    named: dict[tuple[str, str], list[str]] = {}
    for line in lines:
        said = _SAID_OF.fullmatch(line)
        if said:
            named.setdefault((said["lead"] or "", said["words"]), []).append(said["name"])
    out = []
    told: set[tuple[str, str]] = set()
    for line in lines:
        said = _SAID_OF.fullmatch(line)
        key = (said["lead"] or "", said["words"]) if said else None
        if key is None or len(named[key]) < FOLD_AT:
            out.append(line)
        elif key not in told:
            told.add(key)
            out.append(f"{key[0]}{key[1]} ({short_names(named[key])})")
    return out


def largest(count: int, sizes: Sequence[float], every: bool) -> tuple[list[int], int]:
    """The positions of the LISTED largest `sizes` in their order (all of them with `every`), and how many are left
    out."""
    if every or count <= LISTED:
        return list(range(count)), 0
    kept = sorted(sorted(range(count), key=lambda i: -sizes[i])[:LISTED])
    return kept, count - LISTED
