"""`ncucampaign report`: one self-contained HTML file (inline CSS and SVG, one small script that sorts and filters
the targets table: navigation.py; no network) with a contents bar, the run's provenance, what to fix first, the
per-target table, a duration chart and a compute-vs-memory throughput chart, the campaign's roofline and each
result's charts (html_charts), and links to every report and log (relative, so the folder can move)."""

from __future__ import annotations

import re
from pathlib import Path

from ncucampaign.escaping import html_text as escape
from ncucampaign.execute.rundir.manifest import Manifest, TargetRecord
from ncucampaign.execute.rundir.result_records import ResultRecord
from ncucampaign.execute.rundir.store import RunDir, RunStore, write_text_atomic
from ncucampaign.results import findings as found
from ncucampaign.results.findings import gain_arithmetic, rank, recorded_findings, shares_of_shown
from ncucampaign.results.metrics import COLUMNS, apart, middle
from ncucampaign.results.page import navigation
from ncucampaign.results.page.html_charts import campaign_roofline, duration_chart, target_charts, throughput_chart
from ncucampaign.results.page.links import TargetLinks, run_link
from ncucampaign.results.reading.runs import LoadedRun
from ncucampaign.results.weights import gpu_time_summary, kernel_names, percent, shares_by_kernel

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2330;background:#fff;
max-width:1350px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.sub{color:#5b6475;margin-bottom:16px}
table{border-collapse:collapse;width:100%;margin:8px 0;table-layout:fixed}
th,td{border-bottom:1px solid #e3e6ec;padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
.table-box{overflow-x:auto;max-width:100%}
#targets{min-width:94em}
#targets th{font-size:11px;overflow-wrap:normal;padding:4px}
#targets td.num,#targets td.status-ok,#targets td.status-bad{padding:4px;overflow-wrap:normal;white-space:nowrap}
col.narrow{width:5.2em} col.status{width:7.4em} col.name{width:12em} col.kernel{width:16em} col.findings{width:11em}
col.files{width:6.6em} td.files{white-space:nowrap;overflow-wrap:normal}
td.findings{font-size:12px}
#targets td.one-line{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;overflow-wrap:normal}
.gain{color:#1d2330;font-weight:600} .result-charts h3{font-size:15px;margin:18px 0 4px}
figure{margin:0} figcaption{color:#5b6475;font-size:12px;margin-bottom:2px}
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
    """`link_base`: the folder the HTML file will be in. Links to reports and logs are relative to it
    when it is in the run directory; from elsewhere (`report -o`) they name the run directory itself,
    never through `latest` (which moves to the next run) nor relative to where the command ran."""
    manifest = run.manifest
    root = run.root.resolve()
    base = (link_base or run.root).resolve()
    inside = base == root or root in base.parents

    def href(relative: str) -> str | None:
        return run_link(root, base if inside else None, relative)

    links = TargetLinks(manifest, root, href)

    charted, per_result = [(t, r) for t in manifest.targets for r in t.results], _per_result(manifest)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>ncucampaign: {escape(manifest.campaign.name)} {escape(manifest.run_id)}</title>",
        f"<style>{STYLE}{navigation.STYLE}</style></head><body>",
        f"<h1>{escape(manifest.campaign.name)}</h1>",
        navigation.contents(_sections(manifest, bool(per_result))),
        f'<div class="sub">run {escape(manifest.run_id)} &middot; {escape(manifest.state)} &middot; '
        f"{', '.join(f'{n} {status}' for status, n in sorted(manifest.counts().items()))}</div>",
        _provenance(manifest),
        '<h2 id="fix-first">What to fix first</h2>',
        _fix_first(manifest),
        *_failed(manifest),
        f'<h2 id="targets-table">Targets ({len(manifest.targets)})</h2>',
        navigation.table_tools(len(manifest.targets)),
        _target_table(manifest, links),
        '<h2 id="charts">Charts</h2>',
        '<div class="charts">',
        duration_chart(charted),
        throughput_chart(charted),
        "</div>",
        '<h2 id="roofline">Roofline</h2>',
        campaign_roofline(manifest),
        *per_result,
        f'<p class="sub">Written by ncucampaign {escape(manifest.tool.version)} from '
        f'<a href="{href("manifest.json")}">manifest.json</a>.</p>',
        navigation.SCRIPT,
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _per_result(manifest: Manifest) -> list[str]:
    """Each result's own charts; nothing at all (not even a heading) when no result has any."""
    blocks = target_charts(manifest)
    return ['<h2 id="per-result">Charts per result</h2>', *blocks] if blocks else []


def _sections(manifest: Manifest, per_result: bool) -> list[tuple[str, str]]:
    """The contents bar's links, in the page's order (a section the page leaves out, left out)."""
    bad = sum(t.status.value != "ok" for t in manifest.targets)
    return [
        ("fix-first", "What to fix first"),
        *([("attention", f"Need attention ({bad})")] if bad else []),
        ("targets-table", f"Targets ({len(manifest.targets)})"),
        ("charts", "Charts"),
        ("roofline", "Roofline"),
        *([("per-result", "Charts per result")] if per_result else []),
    ]


def _fix_first(manifest: Manifest, count: int = 10) -> str:
    """ncu's own findings across the campaign, ranked by estimated application gain when the run was
    weighed, else by ncu's estimated speedup (`ncucampaign findings`)."""
    groups = rank(recorded_findings(manifest), shares=shares_by_kernel(manifest), names=kernel_names(manifest))[:count]
    summary = f'<p class="sub">{escape(gpu_time_summary(manifest))}</p>'
    if not groups:
        return summary + '<p class="sub">ncu\'s rules reported nothing to act on (or the reports were not read).</p>'
    held = shares_of_shown(groups)
    if held is not None:
        summary += f'<p class="sub">The kernels below hold {100 * held:.1f}% of the application\'s GPU time.</p>'
    items = []
    for group in groups:
        rule = group.first
        speedup = f"estimated speedup {percent(rule.speedup)}" if rule.speedup is not None else "no estimate"
        gain = ""
        if group.gain is not None:
            terms = escape(gain_arithmetic(group, shown=None))
            gain = f'<br><span class="gain">application gain {percent(group.gain)} of GPU time = {terms}</span>'
        items.append(
            f'<li><b>{escape(rule.title or rule.name)}</b> <span class="sub">{escape(rule.kind)} &middot; '
            f"{escape(rule.rule)} &middot; {speedup} &middot; {_breakable(found.where_found(group))} &middot; "
            f"kernel(s) {_breakable(found.first_few(group.kernels))}</span>{gain}<br>{escape(rule.message)}</li>"
        )
    return summary + '<ol class="fix-first">' + "".join(items) + "</ol>"


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
    listed = "<ul>" + "".join(items) + "</ul>"
    if len(bad) > FOLDED_FROM:  # 500 of them were 20,000 px before the table
        listed = f"<details><summary>{len(bad)} targets (show them, or filter the table)</summary>{listed}</details>"
    return ['<h2 id="attention">Targets that need attention</h2>', listed]


FOLDED_FROM = 20  # targets that need attention, listed open up to this many


def _provenance(manifest: Manifest) -> str:
    gpus = "; ".join(f"{g.index}: {g.name} ({g.uuid}), driver {g.driver_version}" for g in manifest.gpus or [])
    git = manifest.workload_git
    rows = [
        ("started", manifest.started_at or "not recorded"),
        ("ended", manifest.ended_at or ("(running)" if manifest.state == "running" else "not recorded")),
        ("host", f"{manifest.host.hostname}" + (f" ({manifest.host.platform})" if manifest.host.platform else "")),
        ("GPU", gpus or "unknown (no nvidia-smi)"),
        ("ncu", f"{manifest.ncu.path} {manifest.ncu.version or ''}"),
        ("campaign", f"{manifest.campaign.source or '(command line)'} sha256 {manifest.campaign.sha256[:16]}"),
        ("workload git", f"{git.commit[:12]}{' (dirty)' if git.dirty else ''} in {git.root}" if git else "not in git"),
        ("command", " ".join(manifest.command_line)),
    ]
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    return f'<dl class="prov">{items}</dl>'


def _target_table(manifest: Manifest, links: TargetLinks) -> str:
    """Fixed column widths whose headers hold whole words ("attemp|ts" at 1,400 px); below
    its minimum width the table scrolls in its own box, never the page, and the findings column keeps
    its width (at 800 px it had 0 px, and rows grew to 3,957 px)."""
    head = ("target", "status", "attempts, s", "GPU time %", "[result] kernel", *(c.header for c in COLUMNS))
    head += ("findings", "files")
    widths = ("name", "status", "narrow", "narrow", "kernel", *("narrow" for _ in COLUMNS), "findings", "files")
    cols = "".join(f'<col class="{w}">' for w in widths)
    rows = [f'<div class="table-box"><table id="targets"><colgroup>{cols}</colgroup><thead><tr>']
    rows[0] += "".join(f'<th data-col="{i}">{h}</th>' for i, h in enumerate(head)) + "</tr></thead>"
    names = apart((target.name for target in manifest.targets), NAME_CELL)
    for target in manifest.targets:
        results: list[ResultRecord | None] = list(target.results) or [None]
        rows.append("<tbody>")  # a target's rows, sorted and filtered as one (navigation.py)
        for position, result in enumerate(results):
            cells = _target_cells(target, names[target.name], len(results)) if position == 0 else []
            if result is None:
                message = target.message if len(target.message) <= 240 else target.message[:239] + "…"
                cells += [
                    f'<td class="one-line" colspan="{2 + len(COLUMNS)}" title="{escape(target.message)}">'
                    f"{escape(message)}</td>"
                ]
            else:
                # one line a result (rows of 113 px at 800-1,200 px): a long kernel name
                # shortened in the middle, as everywhere else, never broken inside an identifier
                cells += [
                    f'<td class="one-line"><code title="{escape(result.demangled)}">[{result.index}] '
                    f"{escape(middle(result.kernel, KERNEL_CELL))}</code></td>",
                    *(f'<td class="num">{c.format(result.value(c.metric))}</td>' for c in COLUMNS),
                    _result_findings(result),
                ]
            if position == 0:
                cells.append(f'<td class="files" rowspan="{len(results)}">{links.of(target)}</td>')
            rows.append("<tr>" + "".join(cells) + "</tr>")
        rows.append("</tbody>")
    rows.append("</table></div>")
    return "\n".join(rows)


SHOWN_FINDINGS = 8  # titles in a row's cell; the rest counted (and all on hover)
KERNEL_CELL = 24  # characters of a kernel name in its 16em column (12 px monospace), "[0] " beside it
# A target's name in its 12em column (14 px proportional type: 16-20 characters a line, 7.5-8 px each in
# Chromium) wraps at its own joints, up to 48 characters whole (three lines of discover's cuBLAS names); at 16 on
# one line, 12 of moe_train's 13 names read alike-cut (`elementwi…kernel`, `…elementw…kernel`).
NAME_CELL = 48
_JOINTS = re.compile(r"(?<=[_\-./:,=\]])|(?<=[a-z0-9])(?=[A-Z])")  # after a separator; before a capital in camelCase


def _breakable(text: str) -> str:
    """`text` escaped, with a line-break opportunity at each joint of an identifier."""
    return "<wbr>".join(escape(part) for part in _JOINTS.split(text) if part)


def _result_findings(result: ResultRecord) -> str:
    """The titles of a result's findings (errors, warnings, suggestions), each once (ncu repeats a
    rule's title for each of its results), with its messages on hover."""
    messages: dict[str, list[str]] = {}
    for finding in result.findings:
        if finding.type not in ("OK", "NONE"):
            messages.setdefault(finding.title or finding.name, []).append(finding.message)
    items = [f'<span title="{escape(chr(10).join(m))}">{escape(title)}</span>' for title, m in messages.items()]
    more = len(items) - SHOWN_FINDINGS
    shown = items[:SHOWN_FINDINGS] + (
        [f'<span title="{escape(", ".join(list(messages)[SHOWN_FINDINGS:]))}">and {more} more</span>']
        if more > 0
        else []
    )
    every = escape("; ".join(messages))  # the whole list on hover: the cell shows one line of it
    return f'<td class="findings one-line" title="{every}">' + "; ".join(shown) + "</td>"


def _share(share: float | None) -> str:
    return "" if share is None else f"{100 * share:.1f}"


def _target_cells(target: TargetRecord, shown: str, span: int) -> list[str]:
    status_class = "status-ok" if target.status.value == "ok" else "status-bad"
    return [
        # whole, or shortened in the middle as kernel names are and apart from the others (metrics.apart)
        f'<td rowspan="{span}" class="name" title="{escape(target.name)}">{_breakable(shown)}</td>',
        f'<td rowspan="{span}" class="{status_class}" title="{escape(target.message)}">{target.status.value}</td>',
        f'<td rowspan="{span}" class="num">{len(target.attempts)}, {target.seconds:.1f}</td>',
        f'<td rowspan="{span}" class="num">{_share(target.gpu_time_share)}</td>',
    ]


def write_report(run: LoadedRun, output: Path | None = None) -> Path:
    """RUN_DIR/report.html (through the run directory's store), or `output`."""
    if output is None:
        store = RunStore(RunDir(run.root.absolute(), run.manifest.run_id))
        return store.write_text("report.html", render_report(run, run.root))
    path = output.absolute()
    write_text_atomic(path, render_report(run, path.parent))
    return path
