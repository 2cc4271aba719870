"""Checks of a whole campaign that need no expansion: how many invocations it makes, and whether
its lint_ignore codes name rules. Pure."""

from __future__ import annotations

import difflib
import math

from pydantic import BaseModel

from ncucampaign.errors import Problem
from ncucampaign.plan.lint_rules import RULES
from ncucampaign.spec.loader import LoadedCampaign
from ncucampaign.spec.model import TargetOptions

MAX_INVOCATIONS = 20_000  # docs/campaigns.md, "Limits"
# The text its invocations hold together (command lines and environments): a run records each about three times
# (plan.json, the manifest's argv and shell command), and its readers take manifests of up to 256 MiB
# (execute/rundir/reading.py). A 1 MB file whose one 131,000-character value is aliased into 10,000 targets stands
# for 1.3 GB of it; planned, it needed 4 GB of memory, and a run of 1,100 such targets wrote a manifest no reader took.
MAX_EXPANDED_BYTES = 64 * 2**20


def too_many_invocations(loaded: LoadedCampaign) -> Problem | None:
    """Counted before anything is expanded: a few matrix lists can multiply into millions."""
    sizes = [math.prod(len(values) for values in (t.matrix or {}).values()) for t in loaded.campaign.targets]
    total = sum(sizes)
    if total <= MAX_INVOCATIONS:
        return None
    position = max(range(len(sizes)), key=sizes.__getitem__)
    biggest = loaded.index_of(position)
    where: tuple[str | int, ...] = ("targets", biggest, "matrix") if sizes[position] > 1 else ("targets",)
    return Problem(
        where,
        f"the campaign expands to {total:,} ncu invocations (targets[{biggest}] alone to {sizes[position]:,}); "
        f"the limit is {MAX_INVOCATIONS:,}",
    )


def text_bytes(value: object) -> int:
    """The characters of every string a value holds, each time it holds it (an aliased string counts wherever the
    alias put it), keys included. Iterative: a campaign nests at most 40 levels, but nothing here relies on it."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, BaseModel):
            stack.extend(getattr(item, name) for name in type(item).model_fields)
    return total


def too_many_bytes(loaded: LoadedCampaign) -> Problem | None:
    """Counted before anything is expanded: each invocation carries the application, the defaults and its target
    (one value of each matrix key), times the target's matrix size."""
    campaign = loaded.campaign
    shared = text_bytes(campaign.application) + text_bytes(campaign.defaults)
    sizes = []
    for target in campaign.targets:
        matrix = target.matrix or {}
        count = math.prod(len(values) for values in matrix.values())
        one = text_bytes(target.model_copy(update={"matrix": None})) + sum(
            text_bytes(values) // max(1, len(values)) + len(key) for key, values in matrix.items()
        )
        sizes.append(count * (shared + one))
    total = sum(sizes)
    if total <= MAX_EXPANDED_BYTES:
        return None
    position = max(range(len(sizes)), key=sizes.__getitem__)
    return Problem(
        ("targets", loaded.index_of(position)),
        f"the campaign expands to {_mib(total)} of command lines and environments once its YAML aliases and matrices "
        f"are expanded (targets[{loaded.index_of(position)}] alone to {_mib(sizes[position])}); the limit is "
        f"{_mib(MAX_EXPANDED_BYTES)}: a run records each invocation's about three times, and its readers take 256 MiB",
    )


def _mib(count: int) -> str:
    return f"{count / 2**20:,.1f} MiB"


def unknown_codes(loaded: LoadedCampaign) -> list[Problem]:
    """lint_ignore codes that name no rule (a typo would silence nothing)."""
    places: list[tuple[tuple[str | int, ...], TargetOptions]] = [(("defaults",), loaded.campaign.defaults)]
    places += [(("targets", loaded.index_of(i)), t) for i, t in enumerate(loaded.campaign.targets)]
    problems = []
    for here, options in places:
        for position, code in enumerate(options.lint_ignore or ()):
            if code not in RULES:
                close = difflib.get_close_matches(code, sorted(RULES), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else f" (codes: {', '.join(sorted(RULES))})"
                problems.append(Problem((*here, "lint_ignore", position), f"no warning has the code {code!r}{hint}"))
    return problems
