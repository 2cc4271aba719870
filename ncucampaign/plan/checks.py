"""Checks of a whole campaign that need no expansion: how many invocations it makes, and whether
its lint_ignore codes name rules. Pure."""

from __future__ import annotations

import difflib
import math

from ncucampaign.errors import Problem
from ncucampaign.plan.lint_rules import RULES
from ncucampaign.spec.loader import LoadedCampaign
from ncucampaign.spec.model import TargetOptions

MAX_INVOCATIONS = 20_000  # docs/campaigns.md, "Limits"


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
