"""Tables for `summarize` and `compare` (rich on a terminal, plain text otherwise), and their CSV
and JSON forms."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Sequence

from rich import box
from rich.markup import escape
from rich.table import Table

from ncucampaign.errors import printable
from ncucampaign.execute.manifest import TargetRecord
from ncucampaign.results.compare import Comparison
from ncucampaign.results.metrics import COLUMNS, STANDARD_METRICS
from ncucampaign.results.runs import TIDY_COLUMNS


def target_table(run_id: str, record: TargetRecord) -> Table:
    extra = sorted({m for r in record.results for m in r.metrics} - set(STANDARD_METRICS))
    table = Table(title=f"{record.name}: {record.status.value} ({run_id})", box=box.SIMPLE_HEAD, title_justify="left")
    for header in ("#", "kernel", *(c.header for c in COLUMNS), *extra, "grid", "block", "device", "process", "NVTX"):
        numeric = header not in ("kernel", "grid", "block", "process", "NVTX")
        table.add_column(escape(header), justify="right" if numeric else "left")
    for result in record.results:
        cells = [str(result.index), escape(result.kernel)]
        for column in COLUMNS:
            cells.append(column.format(result.value(column.metric)) or "-")
        for metric in extra:
            measured = result.metrics.get(metric)
            cells.append("-" if measured is None else escape(f"{measured.value} {measured.unit}".strip()))
        cells += [
            "x".join(map(str, result.grid)) if result.grid else "-",
            "x".join(map(str, result.block)) if result.block else "-",
            "-" if result.device is None else str(result.device),
            f"{result.process.name} {result.process.pid}" if result.process else "-",
            escape(", ".join(result.nvtx)),
        ]
        table.add_row(*cells)
    if not record.results:
        table.caption = escape(record.message or "no results recorded")
    return table


def tidy_csv(rows: Sequence[dict[str, object]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=TIDY_COLUMNS, lineterminator="\n")
    writer.writeheader()
    # Control characters (from a kernel or NVTX name) are written as escapes, never sent to a terminal.
    writer.writerows(
        {key: printable(value) if isinstance(value, str) else value for key, value in row.items()} for row in rows
    )
    return out.getvalue()


def tidy_json(rows: Sequence[dict[str, object]]) -> str:
    return json.dumps(list(rows), indent=1) + "\n"


def comparison_table(comparison: Comparison, threshold: float, all_rows: bool) -> Table:
    table = Table(
        title=f"changes beyond {threshold:.0%} are flagged; a duration that grew is a regression",
        box=box.SIMPLE_HEAD,
        title_justify="left",
    )
    for header in ("target", "#", "kernel", "metric", "before", "after", "change", ""):
        table.add_column(header, justify="right" if header in ("#", "before", "after", "change") else "left")
    for change in comparison.changes:
        if not (all_rows or change.flagged):
            continue
        label = STANDARD_METRICS.get(change.metric, change.metric)
        relative = "n/a" if change.relative is None else f"{change.relative:+.1%}"
        flag = "[bold red]REGRESSION[/]" if change.regression else "[yellow]changed[/]" if change.flagged else ""
        table.add_row(
            escape(change.target),
            str(change.result),
            escape(change.kernel),
            escape(f"{label} ({change.unit})"),
            f"{change.before:.4g}",
            f"{change.after:.4g}",
            relative,
            flag,
        )
    return table


def comparison_json(comparison: Comparison) -> str:
    data = {
        "changes": [dataclasses.asdict(change) for change in comparison.changes],
        "only_in_a": list(comparison.only_in_a),
        "only_in_b": list(comparison.only_in_b),
        "notes": list(comparison.notes),
        "problems": list(comparison.problems),
        "regressions": len(comparison.regressions),
    }
    return json.dumps(data, indent=1) + "\n"
