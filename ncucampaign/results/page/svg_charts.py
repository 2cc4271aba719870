"""A result's charts as plain SVG: bars (one per label and value), and PM-sampling timelines (each
sampled metric, percent of peak, against time: ncu samples from before the kernel starts to after it
ends; the chart shows the samples around the kernel's activity, with two samples either side)."""

from __future__ import annotations

from collections.abc import Sequence

from ncucampaign.escaping import html_text as escape
from ncucampaign.execute.rundir.result_records import PmSeries

WIDTH, HEIGHT = 560, 220
LEFT, RIGHT, TOP, BOTTOM = 44, 150, 10, 34
COLOURS = ("#3d6fd8", "#d8663d", "#2f9e62", "#7b4fd0")
ACTIVITY = "SM instructions %"
PAD = 2


def active_window(series: Sequence[PmSeries]) -> tuple[float, float]:
    """The times around the kernel's activity, two samples either side (all samples when none shows)."""
    driver = next((s for s in series if s.label == ACTIVITY), series[0])
    times = [t for t, _ in driver.samples]
    busy = [i for i, (_, value) in enumerate(driver.samples) if value > 0] or [0, len(times) - 1]
    return times[max(busy[0] - PAD, 0)], times[min(busy[-1] + PAD, len(times) - 1)]


def timeline_svg(series: Sequence[PmSeries], element_id: str, title: str) -> str:
    start, end = active_window(series)
    span = (end - start) or 1.0
    x0, x1, y0, y1 = LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM, TOP
    out = [
        f'<svg id="{escape(element_id)}" class="timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img" aria-label="{escape(title)}" data-t-range="{start!r} {end!r}" '
        f'data-plot="{x0} {y0} {x1} {y1}">'
    ]
    for tick in range(0, 101, 25):
        y = y0 - (y0 - y1) * tick / 100
        out.append(f'<line class="grid" x1="{x0}" y1="{y:.2f}" x2="{x1}" y2="{y:.2f}"/>'
                   f'<text x="{x0 - 4}" y="{y + 4:.2f}" text-anchor="end">{tick}</text>')  # fmt: skip
    out.append(f'<text x="{x0}" y="{HEIGHT - 18}">0</text><text x="{x1}" y="{HEIGHT - 18}" text-anchor="end">'
               f"{span / 1000:.1f} us</text>")  # fmt: skip
    out.append(f'<text x="{(x0 + x1) / 2}" y="{HEIGHT - 4}" text-anchor="middle">time (PM samples)</text>')
    for position, one in enumerate(series):
        colour = COLOURS[position % len(COLOURS)]
        kept = [(t, v) for t, v in one.samples if start <= t <= end and 0 <= v < float("inf")]
        if not kept:
            continue
        points = " ".join(f"{x0 + (x1 - x0) * (t - start) / span:.2f},{y0 - (y0 - y1) * min(v, 100.0) / 100:.2f}"
                          for t, v in kept)  # fmt: skip
        out.append(
            f'<polyline class="pm-series" fill="none" stroke="{colour}" stroke-width="1.5" points="{points}" '
            f'data-label="{escape(one.label)}"><title>{escape(one.label)}: peak {max(v for _, v in kept):.1f}%'
            "</title></polyline>"
        )
        out.append(f'<text x="{x1 + 8}" y="{y1 + 12 + 14 * position}" style="fill:{colour}">{escape(one.label)}</text>')
    out.append("</svg>")
    return "".join(out)


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
