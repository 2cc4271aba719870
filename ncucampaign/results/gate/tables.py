"""compare's verdicts as a table for the terminal and as JSON records."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ncucampaign.errors import printable
from ncucampaign.results.gate.folding import LISTED
from ncucampaign.results.gate.samples import TargetVerdict
from ncucampaign.results.gate.verdicts import Verdict
from ncucampaign.results.metrics import STANDARD_METRICS

_STYLE = {
    Verdict.SLOWER: "bold red",
    Verdict.FASTER: "green",
    Verdict.CHANGED: "bold yellow",
    Verdict.AMBIGUOUS: "yellow",
    Verdict.SAME: "",
}


MAX_ROWS = LISTED  # rows of one verdict shown without --all: a run of 20,000 targets made 20,000 AMBIGUOUS


def listed_verdicts(verdicts: Sequence[TargetVerdict], every: bool) -> tuple[list[TargetVerdict], list[str]]:
    """Every verdict but SAME (`every`: SAME too), worst first, at most MAX_ROWS of each verdict, those that moved
    most (`every`: all); and what is left out ('19960 more AMBIGUOUS')."""
    order = list(_STYLE)
    kept = sorted(
        (v for v in verdicts if every or v.verdict is not Verdict.SAME),
        key=lambda v: (order.index(v.verdict), -abs(v.shift or 0.0)),
    )
    seen: Counter[Verdict] = Counter()
    shown = []
    for v in kept:
        seen[v.verdict] += 1
        if every or seen[v.verdict] <= MAX_ROWS:
            shown.append(v)
    hidden = [] if every else [f"{seen[v] - MAX_ROWS} more {v.value}" for v in order if seen[v] > MAX_ROWS]
    return shown, hidden


def verdict_table(verdicts: tuple[TargetVerdict, ...], every: bool) -> Table:
    """The verdicts listed_verdicts keeps; the reason says how each was decided."""
    shown, hidden = listed_verdicts(verdicts, every)
    same = sum(1 for v in verdicts if v.verdict is Verdict.SAME)
    title = "verdicts (samples: the results of a target in its first result's launch state)"
    table = Table(title=Text(title), box=box.SIMPLE_HEAD, title_justify="left")
    for header in ("target", "metric", "verdict", "samples A/B", "reason"):
        table.add_column(header, justify="right" if header == "samples A/B" else "left")
    for v in shown:
        style = _STYLE[v.verdict]
        table.add_row(
            escape(printable(v.target)),
            escape(STANDARD_METRICS.get(v.metric, v.metric)),
            f"[{style}]{v.verdict.value}[/]" if style else v.verdict.value,
            f"{v.samples[0]}/{v.samples[1]}",
            escape(printable(v.reason)),
        )
    left_out = [*hidden, *([f"{same} SAME"] if same else [])]
    if left_out and not every:
        table.caption = f"{' and '.join(left_out)} not shown (--all shows them)"
        table.caption_justify = "left"
    return table


def verdict_records(verdicts: tuple[TargetVerdict, ...]) -> list[dict[str, object]]:
    return [{**dataclasses.asdict(v), "verdict": v.verdict.value, "samples": list(v.samples)} for v in verdicts]
