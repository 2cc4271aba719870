"""Horizontal bar charts as plain SVG: a result's memory chart (bytes over each link) and its warp
states. Each bar carries its value (data-value) and the chart its scale (data-max, data-plot)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

LABEL, PLOT, ROW = 190, 260, 20


def bars_svg(rows: Sequence[tuple[str, float]], element_id: str, title: str, unit: str, digits: int = 2) -> str:
    """One bar per (label, value), scaled to the largest; `unit` names what the numbers count."""
    rows = [(label, value) for label, value in rows if 0 <= value < float("inf")]  # a manifest may hold anything
    top = max((value for _, value in rows), default=0.0) or 1.0
    height = 24 + ROW * max(len(rows), 1)
    out = [
        f'<svg id="{escape(element_id)}" class="bars" xmlns="http://www.w3.org/2000/svg" '
        f'width="{LABEL + PLOT + 90}" height="{height}" role="img" aria-label="{escape(title)}" '
        f'data-max="{top!r}" data-plot="{LABEL} {LABEL + PLOT}">'
    ]
    for position, (label, value) in enumerate(rows):
        y = 4 + position * ROW
        width = PLOT * value / top
        shown = f"{value:,.{digits}f}"
        out.append(f'<text x="{LABEL - 6}" y="{y + 13}" text-anchor="end">{escape(label)}</text>')
        out.append(
            f'<rect class="bar" x="{LABEL}" y="{y + 2}" width="{width:.2f}" height="{ROW - 6}" '
            f'data-value="{value!r}" data-label="{escape(label)}"><title>{escape(label)}: {shown} {escape(unit)}'
            "</title></rect>"
        )
        out.append(f'<text x="{LABEL + width + 4:.2f}" y="{y + 13}">{shown}</text>')
    if not rows:
        out.append('<text x="10" y="16">nothing recorded</text>')
    out.append(f'<text x="{LABEL}" y="{height - 4}">{escape(unit)}</text></svg>')
    return "".join(out)
