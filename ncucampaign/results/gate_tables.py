"""compare's verdicts as a table for the terminal and as JSON records."""

from __future__ import annotations

import dataclasses

from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ncucampaign.errors import printable
from ncucampaign.results.gate import TargetVerdict
from ncucampaign.results.metrics import STANDARD_METRICS
from ncucampaign.results.verdicts import Verdict

_STYLE = {
    Verdict.SLOWER: "bold red",
    Verdict.FASTER: "green",
    Verdict.CHANGED: "bold yellow",
    Verdict.AMBIGUOUS: "yellow",
    Verdict.SAME: "",
}


def verdict_table(verdicts: tuple[TargetVerdict, ...], every: bool) -> Table:
    """Every verdict but SAME (`every`: SAME too), worst first; the reason says how it was decided."""
    order = list(_STYLE)
    shown = sorted(
        (v for v in verdicts if every or v.verdict is not Verdict.SAME), key=lambda v: order.index(v.verdict)
    )
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
    if same and not every:
        table.caption = f"{same} SAME not shown (--all shows them)"
        table.caption_justify = "left"
    return table


def verdict_records(verdicts: tuple[TargetVerdict, ...]) -> list[dict[str, object]]:
    return [{**dataclasses.asdict(v), "verdict": v.verdict.value, "samples": list(v.samples)} for v in verdicts]
