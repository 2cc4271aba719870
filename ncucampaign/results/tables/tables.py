"""Tables for `compare` and the rich table `summarize` shares (results/tables/target_tables.py), and the CSV
and JSON forms of both."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from rich import box
from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ncucampaign.errors import printable
from ncucampaign.escaping import csv_text
from ncucampaign.results.gate.compare import Change, Comparison
from ncucampaign.results.gate.folding import largest
from ncucampaign.results.gate.report import gate_line, gate_verdict
from ncucampaign.results.gate.tables import verdict_records
from ncucampaign.results.metrics import STANDARD_METRICS, middle
from ncucampaign.results.reading.runs import TIDY_COLUMNS
from ncucampaign.spec.ncu_catalog import DURATION

TEXT_COLUMNS = ("target", "kernel", "metric", "grid", "block", "process", "NVTX", "")


def rich_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    """Numbers are never cut: a numeric column is at least as wide as its widest cell, so a narrow
    terminal shortens or wraps the text columns instead; the kernel name is never wrapped."""
    table = Table(title=Text(printable(title)), box=box.SIMPLE_HEAD, title_justify="left")
    for position, header in enumerate(headers):
        if header == "kernel":
            widest = max([len(Text.from_markup(row[position]).plain) for row in rows] + [1])
            table.add_column(header, justify="left", no_wrap=True, min_width=widest)
            continue
        if header in TEXT_COLUMNS:
            table.add_column(escape(header), justify="left")
            continue
        widest = max([len(Text.from_markup(row[position]).plain) for row in rows] + [1])
        table.add_column(escape(header), justify="right", no_wrap=True, min_width=widest)
    for row in rows:  # values from a manifest must not drive the terminal (escape sequences)
        table.add_row(*(printable(cell) for cell in row))
    return table


def tidy_csv(rows: Sequence[dict[str, object]]) -> str:
    return csv_text([TIDY_COLUMNS, *([row.get(column) for column in TIDY_COLUMNS] for row in rows)])


def tidy_json(rows: Sequence[dict[str, object]]) -> str:
    return _records_json(rows) + "\n"


def _records_json(records: Sequence[dict[str, object]]) -> str:
    """A JSON list with one record a line: as readable as indented JSON for lists of flat records, and
    written by json's C encoder (an indent selects its Python one: 20,000 targets took 5 s more)."""
    if not records:
        return "[]"
    return "[\n" + ",\n".join(json.dumps(record) for record in records) + "\n]"


_VERDICT_STYLE = {"SLOWER": "bold red", "FASTER": "green", "CHANGED": "bold yellow", "AMBIGUOUS": "yellow", "SAME": ""}


def comparison_table(comparison: Comparison, threshold: float, all_rows: bool, wide: bool = False) -> RenderableType:
    """The values that moved beyond the threshold, the LISTED that moved most (`all_rows`: every value); a duration's
    row says its target's verdict (the one vocabulary the gate decides in: no row is called a regression the gate
    lets pass)."""
    title = f"changes beyond {threshold:.0%} are flagged; a duration shows its target's verdict (below)"
    verdict_of = {v.target: v.verdict.value for v in comparison.verdicts if v.metric == DURATION}
    listed = [change for change in comparison.changes if all_rows or change.flagged]
    kept, left_out = largest(len(listed), [abs(change.relative or 0.0) for change in listed], all_rows)
    rows = [_change_row(listed[i], verdict_of, wide) for i in kept]
    if not rows:
        return Text("no change beyond the threshold" if comparison.changes else "nothing to compare")
    table = rich_table(title, ("target", "#", "kernel", "metric", "before", "after", "change", ""), rows)
    if left_out:
        table.caption = f"{left_out} more flagged changes not shown (--all shows them, --format json holds them)"
        table.caption_justify = "left"
    return table


def _change_row(change: Change, verdict_of: dict[str, str], wide: bool) -> list[str]:
    label = STANDARD_METRICS.get(change.metric, change.metric)
    relative = "n/a" if change.relative is None else f"{change.relative:+.1%}"
    verdict = verdict_of.get(change.target, "") if change.metric == DURATION else ""
    style = _VERDICT_STYLE.get(verdict, "")
    flag = f"[{style}]{verdict}[/]" if style else verdict
    if not verdict:
        flag = "[yellow]changed[/]" if change.flagged else ""
    return [
        escape(change.target),
        str(change.result),
        escape(change.kernel if wide else middle(change.kernel)),
        escape(f"{label} ({change.unit})"),
        f"{change.before:.4g}",
        f"{change.after:.4g}",
        relative,
        flag,
    ]


def comparison_json(comparison: Comparison, strict: bool = False, more: Mapping[str, object] | None = None) -> str:
    """compare's and ab's JSON; `more`: fields of the command's own (ab's run directories)."""
    lists = {
        "only_in_a": comparison.only_in_a,
        "only_in_b": comparison.only_in_b,
        "notes": comparison.notes,
        "problems": comparison.problems,
        "findings_appeared": comparison.findings_appeared,
        "findings_disappeared": comparison.findings_disappeared,
    }
    # vars(): the frozen dataclass's fields as they are (dataclasses.asdict deep-copies each one).
    fields = [f' "changes": {_records_json([vars(change) for change in comparison.changes])}']
    fields += [f" {json.dumps(key)}: {json.dumps(list(values))}" for key, values in lists.items()]
    fields.append(f' "verdicts": {_records_json(verdict_records(comparison.verdicts))}')
    fields.append(f' "regressions": {len(comparison.regressions)}')
    fields.append(f' "failing": {len(comparison.failing(strict))}')
    passed = not comparison.failed(strict)
    gate = {"passed": passed, "line": gate_line(comparison, strict), "verdict": gate_verdict(comparison, strict)}
    fields.append(f' "gate": {json.dumps(gate)}')
    fields += [f" {json.dumps(key)}: {json.dumps(value)}" for key, value in (more or {}).items()]
    return "{\n" + ",\n".join(fields) + "\n}\n"
