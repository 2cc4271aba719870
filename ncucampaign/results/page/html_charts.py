"""The report's charts: durations, compute against memory throughput, the campaign's roofline (every
profiled kernel, sized by its share of GPU time) and each target's own roofline, memory chart and
warp states, where its report holds the data. Plain SVG, drawn here: no script, nothing fetched."""

from __future__ import annotations

import math

from ncucampaign.escaping import html_text as escape
from ncucampaign.execute.rundir.manifest import Manifest, TargetRecord
from ncucampaign.execute.rundir.result_records import ResultRecord
from ncucampaign.results.metrics import MEMORY_THROUGHPUT, SM_THROUGHPUT, apart, middle
from ncucampaign.results.page.svg_charts import bars_svg, timeline_svg
from ncucampaign.results.page.svg_roofline import Plotted, roofline_svg
from ncucampaign.results.reading.roofline import memory_flows, roofline_of, warp_states
from ncucampaign.results.weights import shares_by_kernel, weighed_as
from ncucampaign.spec.ncu_catalog import DURATION

STALLS_SHOWN = 10


def slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text)


def plotted_rooflines(manifest: Manifest) -> list[Plotted]:
    """Every result with roofline data, with its kernel's share of GPU time when the run was weighed."""
    shares = shares_by_kernel(manifest)
    plotted = []
    for target in manifest.targets:
        for result in target.results:
            roofline = roofline_of(result.value, result.metrics)
            if roofline is not None:
                plotted.append(Plotted(_label(target, result), result.kernel, roofline, shares.get(weighed_as(result))))
    return plotted


def campaign_roofline(manifest: Manifest) -> str:
    plotted = plotted_rooflines(manifest)
    if not plotted:
        return (
            '<p class="sub">No roofline: no result holds the roofline metrics (targets with <code>set: full</code> '
            "or <code>set: roofline</code> collect them).</p>"
        )
    sized = "points sized by the kernel's share of GPU time" if any(p.share for p in plotted) else "no shares known"
    caption = f"Roofline of the campaign: {len(plotted)} result(s), {sized}; ceilings from {plotted[0].label}'s report"
    chart = roofline_svg(plotted, "campaign-roofline", caption)
    return f"<figure><figcaption>{escape(caption)}</figcaption>{chart}</figure>"


def target_charts(manifest: Manifest) -> list[str]:
    """One block per result with chart data: its roofline, memory chart and warp states."""
    shares = shares_by_kernel(manifest)
    blocks = []
    for target in manifest.targets:
        for result in target.results:
            figures = _result_figures(target, result, shares.get(weighed_as(result)))
            if figures:
                label = _label(target, result)
                blocks.append(
                    f'<section class="result-charts" id="charts-{slug(label)}"><h3>{escape(label)} '
                    f'<code title="{escape(result.demangled)}">{escape(middle(result.kernel))}</code></h3>'
                    f'<div class="charts">{"".join(figures)}</div></section>'
                )
    return blocks


def _result_figures(target: TargetRecord, result: ResultRecord, share: float | None) -> list[str]:
    label, figures = _label(target, result), []
    roofline = roofline_of(result.value, result.metrics)
    if roofline is not None:
        plotted = [Plotted(label, result.kernel, roofline, share)]
        chart = roofline_svg(plotted, f"roofline-{slug(label)}", f"roofline of {label}")
        figures.append(f"<figure><figcaption>Roofline</figcaption>{chart}</figure>")
    flows = memory_flows(result.value)
    if flows:
        chart = bars_svg(flows, f"memory-{slug(label)}", f"memory chart of {label}", "bytes", digits=0)
        figures.append(f"<figure><figcaption>Memory chart: bytes over each link</figcaption>{chart}</figure>")
    states = [(name, value) for name, value in warp_states(result.value) if value > 0][:STALLS_SHOWN]
    if states:
        unit = "cycles per issued instruction"
        chart = bars_svg(states, f"warp-states-{slug(label)}", f"warp states of {label}", unit)
        figures.append(f"<figure><figcaption>Warp states (largest {len(states)})</figcaption>{chart}</figure>")
    series = [s for s in result.pm_samples if len(s.samples) >= 2]
    if series:
        chart = timeline_svg(series, f"pm-sampling-{slug(label)}", f"PM sampling of {label}")
        figures.append(f"<figure><figcaption>PM sampling, % of peak</figcaption>{chart}</figure>")
    return figures


def _label(target: TargetRecord, result: ResultRecord) -> str:
    suffix = f"[{result.index}]" if len(target.results) > 1 else ""
    return f"{target.name}{suffix}"


DURATION_BARS = 40  # bars of the duration chart: the longest results
DURATION_LABEL = 32  # characters of a bar's label in its 230 px (11 px type, ~6.5 px a character)


def duration_chart(charted: list[tuple[TargetRecord, ResultRecord]]) -> str:
    durations = [(t, r, r.value(DURATION)) for t, r in charted]
    # finite and not negative: a manifest is data, and a NaN drew width="nan"
    bars = [(t, r, d) for t, r, d in durations if d is not None and 0 <= d < math.inf]
    every = len(bars)
    if every > DURATION_BARS:  # 300 bars drew a chart of 6,000 px: the longest, in the run's order
        kept = {id(bar) for bar in sorted(bars, key=lambda bar: -bar[2])[:DURATION_BARS]}
        bars = [bar for bar in bars if id(bar) in kept]
    label_width, plot_width, row = 230, 360, 20
    height = 40 + row * max(len(bars), 1)
    top = max((d for _, _, d in bars if d is not None), default=1.0) or 1.0
    caption = "Duration per result (us)" + (f": the {len(bars)} longest of {every}" if every > len(bars) else "")
    out = [
        f"<figure><figcaption>{caption}</figcaption>"
        f'<svg id="durations-chart" xmlns="http://www.w3.org/2000/svg" width="{label_width + plot_width + 70}" '
        f'height="{height}" role="img" aria-label="duration per result">'
    ]
    labels = apart((_label(target, result) for target, result, _ in bars), DURATION_LABEL)
    for position, (target, result, duration) in enumerate(bars):
        y = 10 + position * row
        width = max(plot_width * (duration or 0) / top, 1)
        label = escape(_label(target, result))
        # shortened in the middle to its 230 px (a 59-character cuDNN name ran 100 px off the chart's left edge at
        # 800 px), both ends kept: "unrolled_elementwise_kernel" and "...kernel-2" stay apart; whole in the title
        shown = escape(labels[_label(target, result)])
        out.append(f'<text x="{label_width - 6}" y="{y + 13}" text-anchor="end">{shown}</text>')
        out.append(
            f'<rect class="bar" x="{label_width}" y="{y + 2}" width="{width:.1f}" height="{row - 6}">'
            f"<title>{label} {escape(result.kernel)}: {(duration or 0) / 1000:.2f} us</title></rect>"
        )
        out.append(f'<text x="{label_width + width + 4:.1f}" y="{y + 13}">{(duration or 0) / 1000:.2f}</text>')
    if not bars:
        out.append('<text x="10" y="25">no durations recorded</text>')
    out.append("</svg></figure>")
    return "".join(out)


def throughput_chart(charted: list[tuple[TargetRecord, ResultRecord]]) -> str:
    size, margin = 320, 44
    out = [
        "<figure><figcaption>Compute (SM) vs memory throughput, % of peak</figcaption>"
        f'<svg id="throughput-chart" xmlns="http://www.w3.org/2000/svg" width="{size + margin + 20}" '
        f'height="{size + margin + 20}" role="img" aria-label="compute versus memory throughput">'
    ]
    for tick in range(0, 101, 20):
        offset = size * tick / 100
        out.append(f'<line class="grid" x1="{margin + offset}" y1="10" x2="{margin + offset}" y2="{10 + size}"/>')
        out.append(
            f'<line class="grid" x1="{margin}" y1="{10 + size - offset}" x2="{margin + size}" '
            f'y2="{10 + size - offset}"/>'
        )
        out.append(f'<text x="{margin + offset}" y="{size + 26}" text-anchor="middle">{tick}</text>')
        out.append(f'<text x="{margin - 6}" y="{10 + size - offset + 4}" text-anchor="end">{tick}</text>')
    out.append(f'<line class="diag" x1="{margin}" y1="{10 + size}" x2="{margin + size}" y2="10"/>')
    out.append(f'<line class="axis" x1="{margin}" y1="{10 + size}" x2="{margin + size}" y2="{10 + size}"/>')
    out.append(f'<line class="axis" x1="{margin}" y1="10" x2="{margin}" y2="{10 + size}"/>')
    out.append(f'<text x="{margin + size / 2}" y="{size + 44}" text-anchor="middle">memory throughput %</text>')
    out.append(
        f'<text transform="translate(12,{10 + size / 2}) rotate(-90)" text-anchor="middle">SM throughput %</text>'
    )
    for target, result in charted:
        sm, memory = result.value(SM_THROUGHPUT), result.value(MEMORY_THROUGHPUT)
        if sm is None or memory is None or not (math.isfinite(sm) and math.isfinite(memory)):
            continue
        x, y = margin + size * min(max(memory, 0), 100) / 100, 10 + size - size * min(max(sm, 0), 100) / 100
        tip = f"{_label(target, result)} {result.kernel}: SM {sm:.1f}%, memory {memory:.1f}%"
        out.append(f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="5"><title>{escape(tip)}</title></circle>')
    out.append("</svg></figure>")
    return "".join(out)
