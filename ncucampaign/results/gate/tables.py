"""compare's verdicts as a table for the terminal and as JSON records."""

from __future__ import annotations

import dataclasses

from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ncucampaign.errors import printable
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


MAX_UNDECIDED_ROWS = 40  # AMBIGUOUS rows shown without --all: a run of 20,000 targets made 20,000 of them


def verdict_table(verdicts: tuple[TargetVerdict, ...], every: bool) -> Table:
    """Every verdict but SAME (`every`: SAME too), worst first, and at most MAX_UNDECIDED_ROWS
    AMBIGUOUS ones (`every`: all); the reason says how it was decided."""
    order = list(_STYLE)
    kept = sorted((v for v in verdicts if every or v.verdict is not Verdict.SAME), key=lambda v: order.index(v.verdict))
    undecided = [v for v in kept if v.verdict is Verdict.AMBIGUOUS]
    hidden = 0 if every else max(0, len(undecided) - MAX_UNDECIDED_ROWS)
    dropped = {id(v) for v in undecided[len(undecided) - hidden :]} if hidden else set()
    shown = [v for v in kept if id(v) not in dropped]
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
    left_out = [f"{count} {what}" for count, what in ((hidden, "more AMBIGUOUS"), (same, "SAME")) if count]
    if left_out and not every:
        table.caption = f"{' and '.join(left_out)} not shown (--all shows them)"
        table.caption_justify = "left"
    return table


def verdict_records(verdicts: tuple[TargetVerdict, ...]) -> list[dict[str, object]]:
    return [{**dataclasses.asdict(v), "verdict": v.verdict.value, "samples": list(v.samples)} for v in verdicts]
