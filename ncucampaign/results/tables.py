"""Tables for `summarize` and `compare` (rich on a terminal, plain text otherwise), and their CSV
and JSON forms."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ncucampaign.errors import printable
from ncucampaign.execute.rundir.manifest import TargetRecord
from ncucampaign.results.compare import Comparison
from ncucampaign.results.gate_report import gate_line
from ncucampaign.results.gate_tables import verdict_records
from ncucampaign.results.metrics import COLUMNS, DURATION, STANDARD_METRICS, middle
from ncucampaign.results.runs import TIDY_COLUMNS

_TEXT_COLUMNS = ("target", "kernel", "metric", "grid", "block", "process", "NVTX", "")


# Dropped first when a terminal is too narrow for every column; the kernel name is never dropped.
_DROPPABLE = ("process", "NVTX", "device", "block", "grid", "passes", "registers", "occupancy %")


def fitted(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None) -> tuple[list[int], list[str]]:
    """The columns (positions) that fit in `width` with every cell whole, dropping _DROPPABLE ones
    in that order (and then extra metrics from the right); and the names of those dropped. Pure."""

    def cell_width(position: int) -> int:  # plain text cells
        return max([len(row[position]) for row in rows] + [len(headers[position])])

    kept = list(range(len(headers)))
    dropped: list[str] = []
    order = [headers.index(name) for name in _DROPPABLE if name in headers]
    order += [i for i in reversed(range(len(headers))) if headers[i] not in (*_DROPPABLE, "#", "kernel")]
    for position in order:
        if width is None or sum(cell_width(i) + 3 for i in kept) <= width:  # a cell and its padding
            break
        kept.remove(position)
        dropped.append(headers[position])
    return kept, dropped


def _table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    """Numbers are never cut: a numeric column is at least as wide as its widest cell, so a narrow
    terminal shortens or wraps the text columns instead; the kernel name is never wrapped."""
    table = Table(title=Text(printable(title)), box=box.SIMPLE_HEAD, title_justify="left")
    for position, header in enumerate(headers):
        if header == "kernel":
            widest = max([len(Text.from_markup(row[position]).plain) for row in rows] + [1])
            table.add_column(header, justify="left", no_wrap=True, min_width=widest)
            continue
        if header in _TEXT_COLUMNS:
            table.add_column(escape(header), justify="left")
            continue
        widest = max([len(Text.from_markup(row[position]).plain) for row in rows] + [1])
        table.add_column(escape(header), justify="right", no_wrap=True, min_width=widest)
    for row in rows:  # values from a manifest must not drive the terminal (escape sequences)
        table.add_row(*(printable(cell) for cell in row))
    return table


@dataclass(frozen=True)
class TargetRows:
    """A target's results as table rows of plain text (no markup)."""

    title: str
    headers: tuple[str, ...]
    rows: list[list[str]]


def target_rows(run_id: str, record: TargetRecord, wide: bool = False) -> TargetRows | str:
    """The rows of the target's results; one line when it has none (no empty table)."""
    source = _obtained_text(record)
    if not record.results:
        why = f": {record.message}" if record.message else ""
        return printable(f"{record.name}: {record.status.value} ({run_id}{source}){why}")
    extra = sorted({m for r in record.results for m in r.metrics} - set(STANDARD_METRICS))
    headers = ("#", "kernel", *(c.header for c in COLUMNS), *extra, "grid", "block", "device", "process", "NVTX")
    rows = []
    for result in record.results:
        cells = [str(result.index), result.kernel if wide else middle(result.kernel)]
        for column in COLUMNS:
            cells.append(column.format(result.value(column.metric)) or "-")
        for metric in extra:
            measured = result.metrics.get(metric)
            cells.append("-" if measured is None else f"{measured.value} {measured.unit}".strip())
        cells += [
            "x".join(map(str, result.grid)) if result.grid else "-",
            "x".join(map(str, result.block)) if result.block else "-",
            "-" if result.device is None else str(result.device),
            f"{result.process.name} {result.process.pid}" if result.process else "-",
            ", ".join(result.nvtx),
        ]
        rows.append([printable(cell) for cell in cells])
    return TargetRows(printable(f"{record.name}: {record.status.value} ({run_id}{source})"), headers, rows)


def target_table(run_id: str, record: TargetRecord, wide: bool = False, width: int | None = None) -> RenderableType:
    """The target's results for a terminal: columns that do not fit `width` are left out (named)."""
    found = target_rows(run_id, record, wide)
    if isinstance(found, str):
        return Text(found)
    kept, dropped = fitted(found.headers, found.rows, None if wide else width)
    headers = [found.headers[i] for i in kept]
    table = _table(found.title, headers, [[escape(row[i]) for i in kept] for row in found.rows])
    if dropped:
        table.caption = f"not shown at this width: {', '.join(dropped)} (--wide shows every column)"
        table.caption_justify = "left"
    return table


def target_text(run_id: str, record: TargetRecord, wide: bool = False) -> str:
    """The same table as plain text, laid out as the terminal's: for files and pipes, where rich's
    layout cost about 10 ms a target (20,000 targets: minutes)."""
    found = target_rows(run_id, record, wide)
    if isinstance(found, str):
        return found + "\n"
    widths = [max(len(found.headers[i]), *(len(row[i]) for row in found.rows)) for i in range(len(found.headers))]
    left = {i for i, header in enumerate(found.headers) if header in _TEXT_COLUMNS}

    def line(cells: Sequence[str]) -> str:
        shown = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return ("  " + "   ".join(shown)).rstrip()

    rule = " " + "─" * (sum(widths) + 3 * (len(widths) - 1) + 2)
    body = [line(row) for row in found.rows]
    return "\n".join([found.title, "", line(found.headers), rule, *body, ""]) + "\n"


def _obtained_text(record: TargetRecord) -> str:
    """', split out of shared/1' / ', alone: <why>' / ', decided on the discovery trace'; '' when unknown."""
    obtained = record.obtained
    if obtained is None:
        return ""
    if obtained.how == "shared":
        return f", split out of {obtained.shared_run}"
    if obtained.how == "trace":
        return ", decided on the discovery trace"
    return f", alone: {obtained.reason}" if obtained.reason else ", alone"


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
    return _records_json(rows) + "\n"


def _records_json(records: Sequence[dict[str, object]]) -> str:
    """A JSON list with one record a line: as readable as indented JSON for lists of flat records, and
    written by json's C encoder (an indent selects its Python one: 20,000 targets took 5 s more)."""
    if not records:
        return "[]"
    return "[\n" + ",\n".join(json.dumps(record) for record in records) + "\n]"


_VERDICT_STYLE = {"SLOWER": "bold red", "FASTER": "green", "CHANGED": "bold yellow", "AMBIGUOUS": "yellow", "SAME": ""}


def comparison_table(comparison: Comparison, threshold: float, all_rows: bool, wide: bool = False) -> RenderableType:
    """The values that moved beyond the threshold; a duration's row says its target's verdict (the one
    vocabulary the gate decides in: no row is called a regression the gate lets pass)."""
    title = f"changes beyond {threshold:.0%} are flagged; a duration shows its target's verdict (below)"
    verdict_of = {v.target: v.verdict.value for v in comparison.verdicts if v.metric == DURATION}
    rows = []
    for change in comparison.changes:
        if not (all_rows or change.flagged):
            continue
        label = STANDARD_METRICS.get(change.metric, change.metric)
        relative = "n/a" if change.relative is None else f"{change.relative:+.1%}"
        verdict = verdict_of.get(change.target, "") if change.metric == DURATION else ""
        style = _VERDICT_STYLE.get(verdict, "")
        flag = f"[{style}]{verdict}[/]" if style else verdict
        if not verdict:
            flag = "[yellow]changed[/]" if change.flagged else ""
        rows.append(
            [
                escape(change.target),
                str(change.result),
                escape(change.kernel if wide else middle(change.kernel)),
                escape(f"{label} ({change.unit})"),
                f"{change.before:.4g}",
                f"{change.after:.4g}",
                relative,
                flag,
            ]
        )
    if not rows:
        return Text("no change beyond the threshold" if comparison.changes else "nothing to compare")
    return _table(title, ("target", "#", "kernel", "metric", "before", "after", "change", ""), rows)


def comparison_json(comparison: Comparison, strict: bool = False) -> str:
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
    fields.append(f' "gate": {json.dumps({"passed": passed, "line": gate_line(comparison, strict)})}')
    return "{\n" + ",\n".join(fields) + "\n}\n"
