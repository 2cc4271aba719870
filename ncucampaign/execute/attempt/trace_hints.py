"""What a discovery trace tells of a target it found nothing for, beyond what ncu's console says: an NVTX range its
include names that no launch ran in (a typo: `decode_stpe/`, with the ranges the trace saw and the one meant), a
launch_skip past the launches its filters match. Said first, and alone: the generic hints (thread scope) would
point the wrong way. Pure."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from ncucampaign.spec.model import TargetOptions
from ncucampaign.spec.ncu_grammar import push_pop_names, split_regex

SHOWN = 8  # ranges named in a hint


def trace_hints(options: TargetOptions, stacks: Iterable[tuple[str, ...]], matched: int) -> list[str]:
    """`stacks`: each traced launch's NVTX stack ('domain:range' entries); `matched`: how many launches the target's
    filters select in the trace."""
    seen = sorted({entry.split(":", 1)[-1] for stack in stacks for entry in stack})
    hints = [hint for expression in options.nvtx_include or () for hint in _unseen(expression, seen)]
    skip = options.launch_skip or 0
    if not hints and matched and skip >= matched:
        hints.append(
            f"launch_skip {skip} is past the end: its filters match {matched} launches in the discovery trace "
            f"(launch_skip 0 to {matched - 1} profile one of them)"
        )
    return hints


def ranges_seen_hints(options: TargetOptions, paths: Iterable[str]) -> list[str]:
    """For a target that ran alone and profiled nothing: the NVTX ranges its include names that none of this run's
    results ran in (`paths`: their push/pop paths, 'Domain@a/b'), with the one it likely meant. A typo there got the
    thread-scope hint, which points the wrong way; [] when no result of the run says which ranges exist."""
    seen = sorted({part for path in paths for part in path.split("@")[-1].split("/") if part})
    if not seen:
        return []
    return [
        hint for expression in options.nvtx_include or () for hint in _unseen(expression, seen, "this run's results")
    ]


def _unseen(expression: str, seen: list[str], where: str = "the discovery trace") -> list[str]:
    if split_regex(expression)[0]:
        return []  # a regex names no range
    wanted = [name for name in push_pop_names(expression) if name and name not in ("*", "+")]
    hints = []
    for name in (n for n in wanted if n not in seen):
        listed = ", ".join(seen[:SHOWN]) + (", ..." if len(seen) > SHOWN else "") if seen else "none"
        close = difflib.get_close_matches(name, seen, n=1)
        meant = f"; did you mean {expression.replace(name, close[0], 1)!r}?" if close else ""
        hints.append(f"no NVTX range {name!r} in {where}; ranges seen: {listed}{meant}")
    return hints
