"""A roofline as plain SVG (log-log: arithmetic intensity against work per second), for one result or
for a whole campaign. Every point carries its numbers (data-intensity, data-work) and the plot its
scale (data-x-range, data-y-range, data-plot), so a test can check that it lies where they say."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ncucampaign.escaping import html_text as escape
from ncucampaign.results.reading.roofline import Roofline

WIDTH, HEIGHT = 560, 360
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 14, 46  # margins
COLOURS = {"FP64": "#7b4fd0", "FP32": "#d8663d", "FP16": "#2f9e62"}
TENSOR_COLOURS = ("#3d6fd8", "#0f8fa8", "#b0398a", "#8a6d1f")  # tensor paths, in the order first plotted


@dataclass(frozen=True)
class Plotted:
    """A roofline to draw: whose it is, and (campaign chart) its GPU-time share, which sizes its points."""

    label: str
    kernel: str
    roofline: Roofline
    share: float | None = None


@dataclass(frozen=True)
class LogScale:
    low: float  # powers of ten
    high: float
    start: float  # pixels
    end: float

    def at(self, value: float) -> float:
        fraction = (math.log10(value) - math.log10(self.low)) / (math.log10(self.high) - math.log10(self.low))
        return self.start + fraction * (self.end - self.start)

    def decades(self) -> list[float]:
        return [10.0**k for k in range(round(math.log10(self.low)), round(math.log10(self.high)) + 1)]


def _decade_range(values: Sequence[float]) -> tuple[float, float]:
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    if not positive:
        return 1.0, 10.0
    low, high = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
    return 10.0**low, 10.0 ** max(high, low + 1)


def colour_of(precision: str) -> str:
    """Fixed for FP64/32/16; a tensor path's by its name, so that it is the same in every chart."""
    if precision in COLOURS:
        return COLOURS[precision]
    return TENSOR_COLOURS[sum(map(ord, precision)) % len(TENSOR_COLOURS)]


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def roofline_svg(plotted: Sequence[Plotted], element_id: str, title: str) -> str:
    """The chart; ceilings from the first roofline's peaks (one GPU's), one per precision plotted."""
    first = plotted[0].roofline
    points = [(p, point) for p in plotted for point in p.roofline.points]
    ceilings = {p.precision: p.peak_work for _, p in points if p.peak_work and 0 < p.peak_work < math.inf}
    bandwidths = [
        (name, bw) for name, bw in (("DRAM", first.dram_peak), ("L2", first.l2_peak)) if bw and 0 < bw < math.inf
    ]
    intensities = [i for _, pt in points for i in (pt.dram_intensity, pt.l2_intensity) if i]
    ridges = [peak / bw for peak in ceilings.values() for _, bw in bandwidths]
    x = LogScale(*_decade_range([*intensities, *ridges]), LEFT, WIDTH - RIGHT)
    y = LogScale(*_decade_range([pt.work for _, pt in points] + list(ceilings.values())), HEIGHT - BOTTOM, TOP)
    legend, legend_height = _legend(list(ceilings), bandwidths)
    out = [
        f'<svg id="{escape(element_id)}" class="roofline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{HEIGHT + legend_height}" role="img" aria-label="{escape(title)}" '
        f'data-x-range="{_fmt(x.low)} {_fmt(x.high)}" '
        f'data-y-range="{_fmt(y.low)} {_fmt(y.high)}" data-plot="{x.start} {y.start} {x.end} {y.end}">',
        *_axes(x, y),
        *_ceilings(x, y, ceilings, bandwidths),
    ]
    biggest = max((p.share or 0.0 for p in plotted), default=0.0)
    for owner, point in points:
        radius = 4.0 if not biggest or owner.share is None else 3.0 + 11.0 * math.sqrt(owner.share / biggest)
        for level, intensity in (("DRAM", point.dram_intensity), ("L2", point.l2_intensity)):
            if not intensity or not (x.low <= intensity <= x.high) or not (y.low <= point.work <= y.high):
                continue
            share = f", {100 * owner.share:.1f}% of GPU time" if owner.share is not None else ""
            tip = (
                f"{owner.label} {owner.kernel}: {point.precision}, {_fmt(point.work)} op/s at "
                f"{_fmt(intensity)} op/byte ({level}){share}"
            )
            fill = colour_of(point.precision) if level == "DRAM" else "none"
            out.append(
                f'<circle class="roofline-point level-{level.lower()}" cx="{x.at(intensity):.2f}" '
                f'cy="{y.at(point.work):.2f}" r="{radius:.1f}" fill="{fill}" stroke="{colour_of(point.precision)}" '
                f'data-intensity="{intensity!r}" data-work="{point.work!r}" data-level="{level}" '
                f'data-precision="{escape(point.precision)}" data-target="{escape(owner.label)}">'
                f"<title>{escape(tip)}</title></circle>"
            )
    out.append(legend)
    out.append("</svg>")
    return "".join(out)


def _axes(x: LogScale, y: LogScale) -> list[str]:
    out = [
        f'<line class="axis" x1="{x.start}" y1="{y.start}" x2="{x.end}" y2="{y.start}"/>',
        f'<line class="axis" x1="{x.start}" y1="{y.start}" x2="{x.start}" y2="{y.end}"/>',
    ]
    for value in x.decades():
        px = x.at(value)
        out.append(f'<line class="grid tick-x" data-value="{_fmt(value)}" x1="{px:.2f}" y1="{y.end}" '
                   f'x2="{px:.2f}" y2="{y.start}"/>')  # fmt: skip
        out.append(f'<text x="{px:.2f}" y="{y.start + 16}" text-anchor="middle">{_fmt(value)}</text>')
    for value in y.decades():
        py = y.at(value)
        out.append(f'<line class="grid tick-y" data-value="{_fmt(value)}" x1="{x.start}" y1="{py:.2f}" '
                   f'x2="{x.end}" y2="{py:.2f}"/>')  # fmt: skip
        out.append(f'<text x="{x.start - 4}" y="{py + 4:.2f}" text-anchor="end">{value:.0e}</text>')
    out.append(f'<text x="{(x.start + x.end) / 2}" y="{HEIGHT - 6}" text-anchor="middle">'
               "arithmetic intensity (operations per byte)</text>")  # fmt: skip
    out.append(f'<text transform="translate(12,{(y.start + y.end) / 2}) rotate(-90)" text-anchor="middle">'
               "operations per second</text>")  # fmt: skip
    return out


def _ceilings(x: LogScale, y: LogScale, peaks: dict[str, float], bandwidths: list[tuple[str, float]]) -> list[str]:
    """Per precision and memory level: the bandwidth slope up to the ridge, then the flat peak."""
    out = []
    for precision, peak in peaks.items():
        for name, bandwidth in bandwidths:
            ridge = peak / bandwidth
            start = max(x.low, y.low / bandwidth)
            corners = [(start, bandwidth * start), (min(ridge, x.high), bandwidth * min(ridge, x.high))]
            if ridge < x.high:
                corners.append((x.high, peak))
            path = " ".join(f"{x.at(a):.2f},{y.at(min(max(b, y.low), y.high)):.2f}" for a, b in corners)
            out.append(
                f'<polyline class="ceiling ceiling-{name.lower()}" fill="none" stroke="{colour_of(precision)}" '
                f'stroke-dasharray="{"none" if name == "DRAM" else "5 3"}" points="{path}" '
                f'data-peak-work="{peak!r}" data-bandwidth="{bandwidth!r}" data-precision="{escape(precision)}">'
                f"<title>{escape(precision)} peak {_fmt(peak)} op/s; {name} {_fmt(bandwidth)} byte/s</title></polyline>"
            )
    return out


def _legend(precisions: list[str], bandwidths: list[tuple[str, float]]) -> tuple[str, int]:
    """The legend below the plot, and its height: inside the plot it covered the ceiling lines (at 1,400 px)."""
    items = [(colour_of(p), p) for p in precisions[:6]]
    top = HEIGHT + 6
    lines = [f'<g class="legend" transform="translate({LEFT},{top})">']
    for position, (colour, text) in enumerate(items):  # two to a row
        column, row = position % 2, position // 2
        lines.append(f'<circle cx="{column * 240 + 4}" cy="{row * 14 + 4}" r="4" fill="{colour}"/>'
                     f'<text x="{column * 240 + 12}" y="{row * 14 + 8}">{escape(text)}</text>')  # fmt: skip
    rows = (len(items) + 1) // 2
    levels = ", ".join(name for name, _ in bandwidths)
    lines.append(f'<text x="0" y="{rows * 14 + 10}">filled: DRAM, hollow: L2; lines: {levels}</text>')
    return "".join(lines) + "</g>", rows * 14 + 22
