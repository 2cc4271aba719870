"""`summarize`'s table of one target: the standard columns and the metrics its campaign asked for,
each value scaled with its unit; every recorded metric with `--all-metrics`, and always in CSV, JSON
and `to_dataframe()`. On a terminal, columns are taken in order of importance while they fit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import RenderableType
from rich.markup import escape
from rich.text import Text

from ncucampaign.errors import printable
from ncucampaign.execute.rundir.manifest import TargetRecord
from ncucampaign.execute.rundir.result_records import ResultRecord
from ncucampaign.results.metrics import COLUMNS, STANDARD_METRICS, middle
from ncucampaign.results.scaled import scaled
from ncucampaign.results.tables.tables import TEXT_COLUMNS, rich_table
from ncucampaign.spec.ncu_grammar import compile_regex, split_regex

_ALWAYS = ("#", "kernel")
_PLACE = ("grid", "block", "device", "process", "NVTX")
CAPTION_NAMES = 8  # a caption names this many columns it leaves out, then counts the rest


def asked_metrics(requested: Sequence[str], recorded: set[str]) -> list[str]:
    """The recorded metrics the request names, in its order: exact names, and `regex:` ones (ncu's
    --metrics syntax) with what they match, sorted."""
    asked: list[str] = []
    for name in requested:
        is_regex, pattern = split_regex(name)
        compiled = compile_regex(pattern)[0] if is_regex else None
        found = sorted(m for m in recorded if compiled.search(m)) if compiled else [name] if name in recorded else []
        asked += [m for m in found if m not in asked]
    return asked


@dataclass(frozen=True)
class TargetRows:
    """A target's results as table rows of plain text (no markup), and its columns by importance."""

    title: str
    headers: tuple[str, ...]
    rows: list[list[str]]
    priority: tuple[str, ...]  # the headers, most important first: what a narrow terminal keeps
    always: int = len(_ALWAYS)  # the first of them that it keeps whatever the width


def target_rows(run_id: str, record: TargetRecord, wide: bool = False, all_metrics: bool = False) -> TargetRows | str:
    """The rows of the target's results; one line when it has none (no empty table)."""
    source = _obtained_text(record)
    if not record.results:
        why = f": {record.message}" if record.message else ""
        return printable(f"{record.name}: {record.status.value} ({run_id}{source}){why}")
    recorded = {m for r in record.results for m in r.metrics} - set(STANDARD_METRICS)
    asked = asked_metrics(record.metrics, recorded)
    rest = sorted(recorded - set(asked)) if all_metrics else []
    standard = tuple(column.header for column in COLUMNS)
    headers = (*_ALWAYS, *standard, *asked, *rest, *_PLACE)
    rows = [_cells(result, wide, [*asked, *rest]) for result in record.results]
    title = printable(f"{record.name}: {record.status.value} ({run_id}{source})")
    return TargetRows(title, headers, rows, (*_ALWAYS, *standard, *asked, *_PLACE, *rest))


def _cells(result: ResultRecord, wide: bool, metrics: Sequence[str]) -> list[str]:
    cells = [str(result.index), result.kernel if wide else middle(result.kernel)]
    cells += [column.format(result.value(column.metric)) or "-" for column in COLUMNS]
    for metric in metrics:
        measured = result.metrics.get(metric)
        cells.append("-" if measured is None else scaled(measured.value, measured.unit))
    cells += [
        "x".join(map(str, result.grid)) if result.grid else "-",
        "x".join(map(str, result.block)) if result.block else "-",
        "-" if result.device is None else str(result.device),
        f"{result.process.name} {result.process.pid}" if result.process else "-",
        ", ".join(result.nvtx),
    ]
    return [printable(cell) for cell in cells]


def fitted(found: TargetRows, width: int | None) -> tuple[list[int], list[str]]:
    """The columns (positions) that fit in `width` with every cell whole, taken in order of importance (a column too
    wide is left out and the next is tried); and the names of those with values left out. Pure."""
    headers = found.headers

    def cell_width(position: int) -> int:  # a cell and the three spaces between columns
        return max([len(row[position]) for row in found.rows] + [len(headers[position])]) + 3

    if width is None:
        return list(range(len(headers))), []
    kept = [headers.index(name) for name in found.priority[: found.always]]
    used = 1 + sum(cell_width(i) for i in kept)  # the table's left edge
    empty = {i for i in range(len(headers)) if all(row[i] in ("", "-") for row in found.rows)}
    for name in found.priority[found.always :]:
        position = headers.index(name)
        if position in empty:  # nothing recorded (no NVTX range): its room goes to a column with values
            continue
        if used + cell_width(position) <= width:
            kept.append(position)
            used += cell_width(position)
    kept.sort()
    return kept, [header for i, header in enumerate(headers) if i not in kept and i not in empty]


def not_shown(dropped: Sequence[str]) -> str:
    named = ", ".join(dropped[:CAPTION_NAMES])
    more = f" and {len(dropped) - CAPTION_NAMES} more" if len(dropped) > CAPTION_NAMES else ""
    return f"not shown at this width: {named}{more} (--wide shows every column)"


def targets_rows(run_id: str, records: Sequence[TargetRecord], wide: bool = False) -> TargetRows:
    """Many targets in one table, a row each: its status, how many results, and its first result's standard columns
    (`summarize` over FOLD_AT targets; --all or --target shows each target's own table)."""
    standard = tuple(column.header for column in COLUMNS)
    headers = ("target", "status", "results", "kernel", *standard, *_PLACE)
    rows = []
    for record in records:
        if record.results:
            cells = _cells(record.results[0], wide, [])[1:]  # less its index: the results column counts them
            if len(record.results) > 1:
                cells[0] += f" (+{len(record.results) - 1})"
        else:
            cells = ["-"] * (1 + len(standard) + len(_PLACE))
        rows.append([printable(record.name), record.status.value, str(len(record.results)), *cells])
    title = printable(f"{run_id}: {len(records)} targets, a row each (its first result)")
    return TargetRows(title, headers, rows, ("target", "status", "results", "kernel", *standard, *_PLACE), 4)


def target_table(
    run_id: str, record: TargetRecord, wide: bool = False, width: int | None = None, all_metrics: bool = False
) -> RenderableType:
    """The target's results for a terminal: columns that do not fit `width` are left out (named)."""
    found = target_rows(run_id, record, wide, all_metrics)
    return rows_table(found, wide, width)


def rows_table(found: TargetRows | str, wide: bool = False, width: int | None = None) -> RenderableType:
    """Rows for a terminal: columns that do not fit `width` are left out (named)."""
    if isinstance(found, str):
        return Text(found)
    kept, dropped = fitted(found, None if wide else width)
    headers = [found.headers[i] for i in kept]
    table = rich_table(found.title, headers, [[escape(row[i]) for i in kept] for row in found.rows])
    if dropped:
        table.caption = not_shown(dropped)
        table.caption_justify = "left"
    return table


def target_text(run_id: str, record: TargetRecord, wide: bool = False, all_metrics: bool = False) -> str:
    """The same table as plain text, laid out as the terminal's: for files and pipes, where rich's
    layout cost about 10 ms a target (20,000 targets: minutes)."""
    return rows_text(target_rows(run_id, record, wide, all_metrics))


def rows_text(found: TargetRows | str) -> str:
    """Rows as plain text, laid out as a terminal's table."""
    if isinstance(found, str):
        return found + "\n"
    widths = [max(len(found.headers[i]), *(len(row[i]) for row in found.rows)) for i in range(len(found.headers))]
    left = {i for i, header in enumerate(found.headers) if header in TEXT_COLUMNS}

    def line(cells: Sequence[str]) -> str:
        shown = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return ("  " + "   ".join(shown)).rstrip()

    rule = " " + "─" * (sum(widths) + 3 * (len(widths) - 1) + 2)
    body = [line(row) for row in found.rows]
    return "\n".join([found.title, "", line(found.headers), rule, *body, ""]) + "\n"


def _obtained_text(record: TargetRecord) -> str:
    """', split (or read) out of shared/1' / ', alone: <why>' / ', decided on the discovery trace'; '' when unknown."""
    obtained = record.obtained
    if obtained is None:
        return ""
    if obtained.how == "shared":
        read_out = record.report is not None and record.report.ids is not None
        return f", {'read' if read_out else 'split'} out of {obtained.shared_run}"
    if obtained.how == "trace" and obtained.miss_run:
        return f", closed on a miss its own run found in run {obtained.miss_run} (kept beside the trace)"
    if obtained.how == "trace":
        return ", decided on the discovery trace"
    return f", alone: {obtained.reason}" if obtained.reason else ", alone"
