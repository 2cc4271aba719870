"""`ncucampaign report`: one self-contained HTML file (inline CSS and SVG; no script, no network)
with the run's provenance, the per-target table, a duration chart and a compute-vs-memory
throughput chart, and links to every report and log (relative, so the folder can move)."""

from __future__ import annotations

import os
from collections.abc import Callable
from html import escape
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from ncucampaign.execute.rundir.manifest import Manifest, ResultRecord, TargetRecord
from ncucampaign.execute.rundir.store import RunDir, RunStore, write_text_atomic
from ncucampaign.results.findings import rank, recorded_findings
from ncucampaign.results.metrics import COLUMNS, DURATION, MEMORY_THROUGHPUT, SM_THROUGHPUT
from ncucampaign.results.runs import LoadedRun

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.sub{color:#5b6475;margin-bottom:16px}
table{border-collapse:collapse;width:100%;margin:8px 0}
th,td{border-bottom:1px solid #e3e6ec;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f6f9;font-weight:600} td.num{text-align:right;font-variant-numeric:tabular-nums}
.status-ok{color:#137333;font-weight:600} .status-bad{color:#b3261e;font-weight:600}
dl.prov{display:grid;grid-template-columns:max-content auto;gap:2px 16px;margin:0}
dl.prov dt{color:#5b6475} dl.prov dd{margin:0;font-family:ui-monospace,monospace}
.charts{display:flex;flex-wrap:wrap;gap:32px;align-items:flex-start}
svg text{font:11px system-ui,sans-serif;fill:#1d2330} .bar{fill:#3d6fd8} .point{fill:#d8663d;fill-opacity:.8}
.axis{stroke:#9aa3b2} .grid{stroke:#e3e6ec} .diag{stroke:#9aa3b2;stroke-dasharray:4 3}
code{font-family:ui-monospace,monospace;font-size:12px}
"""


def render_report(run: LoadedRun, link_base: Path | None = None) -> str:
    """`link_base`: the folder the HTML file will be in (links to reports and logs are relative to it)."""
    manifest = run.manifest
    base = link_base or run.root

    def href(relative: str) -> str | None:
        return run_link(run.root, base, relative)

    charted = [(t, r) for t in manifest.targets for r in t.results]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>ncucampaign: {escape(manifest.campaign.name)} {escape(manifest.run_id)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{escape(manifest.campaign.name)}</h1>",
        f'<div class="sub">run {escape(manifest.run_id)} &middot; {escape(manifest.state)} &middot; '
        f"{_counts(manifest)}</div>",
        _provenance(manifest),
        "<h2>What to fix first</h2>",
        _fix_first(manifest),
        *_failed(manifest),
        "<h2>Targets</h2>",
        _target_table(manifest, href),
        "<h2>Charts</h2>",
        '<div class="charts">',
        _duration_chart(charted),
        _throughput_chart(charted),
        "</div>",
        f'<p class="sub">Written by ncucampaign {escape(manifest.tool.version)} from '
        f'<a href="{href("manifest.json")}">manifest.json</a>.</p>',
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def run_link(root: Path, base: Path, relative: str) -> str | None:
    """An href (escaped) for a file the manifest names inside the run directory; None for anything
    else: an absolute path, one that leaves the run directory, control characters, a URL such as
    `javascript:...` (a manifest is data, and may have been edited by anyone)."""
    path = PurePosixPath(relative)
    if not relative or path.is_absolute() or ".." in path.parts or "\\" in relative:
        return None
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in relative) or ":" in path.parts[0]:
        return None  # control characters, or what reads as a URL scheme (javascript:, data:)
    target = os.path.relpath(root / relative, base)
    # percent-encoded, and never starting with a scheme: a ':' in it is encoded too
    encoded = quote(target, safe="/")
    return escape(encoded if encoded.startswith(("../", "./")) else f"./{encoded}")


def _fix_first(manifest: Manifest, count: int = 10) -> str:
    """ncu's own findings across the campaign, ranked by estimated speedup (`ncucampaign findings`)."""
    groups = rank(recorded_findings(manifest))[:count]
    if not groups:
        return '<p class="sub">ncu\'s rules reported nothing to act on (or the reports were not read).</p>'
    items = []
    for group in groups:
        rule = group.first
        speedup = f"estimated speedup {rule.speedup:.0f}%" if rule.speedup is not None else "no estimate"
        where = ", ".join(group.targets[:6]) + (" ..." if len(group.targets) > 6 else "")
        items.append(
            f'<li><b>{escape(rule.title or rule.name)}</b> <span class="sub">{escape(rule.kind)} &middot; '
            f"{escape(rule.rule)} &middot; {speedup} &middot; {len(group.occurrences)} result(s) in "
            f"{escape(where)}</span><br>{escape(rule.message)}</li>"
        )
    return "<ol>" + "".join(items) + "</ol>"


def _failed(manifest: Manifest) -> list[str]:
    """Targets that are not ok, with the diagnosis and the suggested fix."""
    bad = [t for t in manifest.targets if t.status.value != "ok"]
    if not bad:
        return []
    items = []
    for target in bad:
        hints = "".join(f"<li>{escape(hint)}</li>" for hint in target.diagnosis)
        items.append(
            f'<li><b>{escape(target.name)}</b>: <span class="status-bad">{target.status.value}</span> '
            f"{escape(target.message)}" + (f"<ul>{hints}</ul>" if hints else "") + "</li>"
        )
    return ["<h2>Targets that need attention</h2>", "<ul>" + "".join(items) + "</ul>"]


def _counts(manifest: Manifest) -> str:
    return ", ".join(f"{count} {status}" for status, count in sorted(manifest.counts().items()))


def _provenance(manifest: Manifest) -> str:
    gpus = "; ".join(f"{g.index}: {g.name} ({g.uuid}), driver {g.driver_version}" for g in manifest.gpus or [])
    git = manifest.workload_git
    rows = [
        ("started", manifest.started_at),
        ("ended", manifest.ended_at or "(running)"),
        ("host", f"{manifest.host.hostname} ({manifest.host.platform})"),
        ("GPU", gpus or "unknown (no nvidia-smi)"),
        ("ncu", f"{manifest.ncu.path} {manifest.ncu.version or ''}"),
        ("campaign", f"{manifest.campaign.source or '(command line)'} sha256 {manifest.campaign.sha256[:16]}"),
        ("workload git", f"{git.commit[:12]}{' (dirty)' if git.dirty else ''} in {git.root}" if git else "not in git"),
        ("command", " ".join(manifest.command_line)),
    ]
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    return f'<dl class="prov">{items}</dl>'


def _target_table(manifest: Manifest, href: Callable[[str], str | None]) -> str:
    head = ("target", "status", "attempts", "s", "result", "kernel", *(c.header for c in COLUMNS), "findings", "files")
    rows = ["<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"]
    for target in manifest.targets:
        results: list[ResultRecord | None] = list(target.results) or [None]
        for position, result in enumerate(results):
            cells = _target_cells(target, len(results)) if position == 0 else []
            if result is None:
                cells += [f'<td colspan="{3 + len(COLUMNS)}">' + escape(target.message) + "</td>"]
            else:
                cells += [
                    f'<td class="num">{result.index}</td>',
                    f'<td><code title="{escape(result.demangled)}">{escape(result.kernel)}</code></td>',
                    *(f'<td class="num">{c.format(result.value(c.metric))}</td>' for c in COLUMNS),
                    _result_findings(result),
                ]
            if position == 0:
                cells.append(f'<td rowspan="{len(results)}">{_links(target, href)}</td>')
            rows.append("<tr>" + "".join(cells) + "</tr>")
    rows.append("</tbody></table>")
    return "\n".join(rows)


def _result_findings(result: ResultRecord) -> str:
    """The titles of a result's findings (errors, warnings, suggestions), each with its message on hover."""
    shown = [f for f in result.findings if f.type not in ("OK", "NONE")]
    items = (f'<span title="{escape(f.message)}">{escape(f.title or f.name)}</span>' for f in shown)
    return "<td>" + "; ".join(items) + "</td>"


def _target_cells(target: TargetRecord, span: int) -> list[str]:
    status_class = "status-ok" if target.status.value == "ok" else "status-bad"
    return [
        f'<td rowspan="{span}">{escape(target.name)}</td>',
        f'<td rowspan="{span}" class="{status_class}" title="{escape(target.message)}">{target.status.value}</td>',
        f'<td rowspan="{span}" class="num">{len(target.attempts)}</td>',
        f'<td rowspan="{span}" class="num">{target.seconds:.1f}</td>',
    ]


def _links(target: TargetRecord, href: Callable[[str], str | None]) -> str:
    links = []
    for kind, path in (("report", target.report.path if target.report else None), ("log", target.log)):
        link = href(path) if path is not None else None
        if link is not None:
            links.append(f'<a class="{kind}-link" href="{link}">{kind}</a>')
        elif path:
            links.append(f"{kind}: <code>{escape(path)}</code> (not a file in the run directory)")
    return " &middot; ".join(links)


def _label(target: TargetRecord, result: ResultRecord) -> str:
    suffix = f"[{result.index}]" if len(target.results) > 1 else ""
    return f"{target.name}{suffix}"


def _duration_chart(charted: list[tuple[TargetRecord, ResultRecord]]) -> str:
    bars = [(t, r, r.value(DURATION)) for t, r in charted if r.value(DURATION) is not None]
    label_width, plot_width, row = 230, 360, 20
    height = 40 + row * max(len(bars), 1)
    top = max((d for _, _, d in bars if d is not None), default=1.0) or 1.0
    out = [
        f"<figure><figcaption>Duration per result (us)</figcaption>"
        f'<svg id="durations-chart" xmlns="http://www.w3.org/2000/svg" width="{label_width + plot_width + 70}" '
        f'height="{height}" role="img" aria-label="duration per result">'
    ]
    for position, (target, result, duration) in enumerate(bars):
        y = 10 + position * row
        width = max(plot_width * (duration or 0) / top, 1)
        label = escape(_label(target, result))
        out.append(f'<text x="{label_width - 6}" y="{y + 13}" text-anchor="end">{label}</text>')
        out.append(
            f'<rect class="bar" x="{label_width}" y="{y + 2}" width="{width:.1f}" height="{row - 6}">'
            f"<title>{label} {escape(result.kernel)}: {(duration or 0) / 1000:.2f} us</title></rect>"
        )
        out.append(f'<text x="{label_width + width + 4:.1f}" y="{y + 13}">{(duration or 0) / 1000:.2f}</text>')
    if not bars:
        out.append('<text x="10" y="25">no durations recorded</text>')
    out.append("</svg></figure>")
    return "".join(out)


def _throughput_chart(charted: list[tuple[TargetRecord, ResultRecord]]) -> str:
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
        if sm is None or memory is None:
            continue
        x, y = margin + size * min(memory, 100) / 100, 10 + size - size * min(sm, 100) / 100
        tip = f"{_label(target, result)} {result.kernel}: SM {sm:.1f}%, memory {memory:.1f}%"
        out.append(f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="5"><title>{escape(tip)}</title></circle>')
    out.append("</svg></figure>")
    return "".join(out)


def write_report(run: LoadedRun, output: Path | None = None) -> Path:
    """RUN_DIR/report.html (through the run directory's store), or `output`."""
    if output is None:
        store = RunStore(RunDir(run.root.absolute(), run.manifest.run_id))
        return store.write_text("report.html", render_report(run, run.root))
    path = output.absolute()
    write_text_atomic(path, render_report(run, path.parent))
    return path
