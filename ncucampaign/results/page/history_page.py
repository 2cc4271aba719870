"""`history --html FILE`: one self-contained page (no server, no script): every change the text output
names, then a small chart per target of its duration across the runs, and of every other metric that
changed, its changes marked in red and a new setting (GPU, ncu version, clock control) as a dashed
line. The charts flow in a grid that stays readable from 800 to 1400 px."""

from __future__ import annotations

from collections.abc import Sequence

from ncucampaign.escaping import html_text
from ncucampaign.results.history.series import Series, change_text, where
from ncucampaign.spec.ncu_catalog import DURATION

WIDTH, HEIGHT, PAD = 360, 150, 28
STILL_SHOWN = 24  # unchanged series drawn in the open; more are folded
LEGEND = (
    "Each chart: a target's duration (or a metric that changed), the median of each run's samples (the "
    "line; a point's tooltip says its run, commit and samples) and their range (grey bars), oldest run "
    "left. A change is a red line before the first run of its new segment; a new setting (GPU, ncu "
    "version, clock control) a dashed one. Under the chart: the commits of the first and last runs and of "
    "each change."
)
STYLE = """
body{font-family:system-ui,sans-serif;margin:16px;max-width:1400px}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:16px}
figure{margin:0;border:1px solid #ddd;padding:8px}figcaption{font-size:13px;overflow-wrap:anywhere}
svg{width:100%;height:auto}.change{color:#b00}
"""


def history_page(title: str, series: Sequence[Series], runs: Sequence[str]) -> str:
    changed = [_figure(s) for s in series if s.changes]
    still = [_figure(s) for s in series if s.metric == DURATION and not s.changes]
    charts = changed + still
    if len(still) > STILL_SHOWN:  # 300 flat charts buried the few that moved: folded, one click away
        folded = f"<details><summary>{len(still)} targets whose duration did not change</summary>"
        charts = [
            *changed,
            "</div>",
            folded,
            '<div class="charts">',
            *still,
            "</div></details>",
            '<div class="charts">',
        ]
    said = [f"<li>{html_text(change_text(s, change))}</li>" for s in series for change in s.changes]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{html_text(title)}</title><style>{STYLE}</style></head><body>",
            f"<h1>{html_text(title)}</h1>",
            f"<p>{len(runs)} runs, oldest first: {html_text(', '.join(runs))}</p>",
            "<h2>Changes</h2>",
            f'<ul class="change">{"".join(said)}</ul>' if said else "<p>no change found</p>",
            f"<p>{LEGEND}</p>",
            '<div class="charts">',
            *charts,
            "</div></body></html>",
        ]
    )


def _figure(s: Series) -> str:
    said = "; ".join(f"{c.verdict} at {where(s, c.at)}" for c in s.changes)
    name = s.target if s.metric == DURATION else f"{s.target} {s.metric}"
    caption = html_text(name) + (f' <span class="change">{html_text(said)}</span>' if said else "")
    return f"<figure>{_svg(s)}<figcaption>{caption}</figcaption></figure>"


def _svg(s: Series) -> str:
    medians = [p.median for p in s.points]
    low = min(min(p.samples) for p in s.points)
    high = max(max(p.samples) for p in s.points)
    span = (high - low) or abs(high) or 1.0
    step = (WIDTH - 2 * PAD) / max(1, len(s.points) - 1)

    def x(i: float) -> float:
        return PAD + i * step

    def y(v: float) -> float:
        return HEIGHT - PAD - (v - low) / span * (HEIGHT - 2 * PAD)

    def shown(value: float) -> str:
        return f"{value * 1e6:.3g} us" if s.metric == DURATION else f"{value:.4g} {s.unit}".rstrip()

    parts = [f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{html_text(s.target)}">']
    for i in s.markers:
        parts.append(_line(x(i - 0.5), "#888", "4 3", "new setting"))
    for change in s.changes:
        parts.append(_line(x(change.at - 0.5), "#b00", "", change.verdict))
    for i, p in enumerate(s.points):
        parts.append(f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{y(min(p.samples)):.1f}" '
                     f'y2="{y(max(p.samples)):.1f}" stroke="#9ab"/>')  # fmt: skip
    path = " ".join(f"{x(i):.1f},{y(m):.1f}" for i, m in enumerate(medians))
    parts.append(f'<polyline points="{path}" fill="none" stroke="#036" stroke-width="1.5"/>')
    for i, p in enumerate(s.points):
        tip = f"{where(s, i)}: median {shown(p.median)}, {len(p.samples)} samples"
        dot = f'<circle cx="{x(i):.1f}" cy="{y(p.median):.1f}" r="2.5" fill="#036">'
        parts.append(f"{dot}<title>{html_text(tip)}</title></circle>")
    parts.append(f'<text x="2" y="12" font-size="10">{shown(high)}</text>')
    parts.append(f'<text x="2" y="{HEIGHT - PAD + 12}" font-size="10">{shown(low)}</text>')
    labelled = sorted({0, len(s.points) - 1, *(c.at for c in s.changes)})
    for i in labelled:  # the ends and the changes: every run's label would overlap on a long history
        commit = s.points[i].commit
        label = commit[:8] if commit else s.points[i].run
        # the ends' labels inside the chart: centred on the first and last points, run ids were clipped
        at, anchor = (2.0, "start") if i == 0 else (WIDTH - 2.0, "end") if i == len(s.points) - 1 else (x(i), "middle")
        parts.append(
            f'<text x="{at:.1f}" y="{HEIGHT - 3}" font-size="9" text-anchor="{anchor}">{html_text(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _line(at: float, color: str, dash: str, label: str) -> str:
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<line x1="{at:.1f}" x2="{at:.1f}" y1="{PAD / 2}" y2="{HEIGHT - PAD / 2}" stroke="{color}"{dashed}>'
        f"<title>{html_text(label)}</title></line>"
    )
