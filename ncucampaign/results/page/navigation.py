"""Finding one's way in a page of 1,000 targets (31,000 px tall, its charts 30,000 px down, no link to any of
it): a contents bar that stays at the top, and a targets table sorted by any column header and filtered by what
a row holds. One small inline script, no network; without script the page reads as before."""

from __future__ import annotations

from collections.abc import Sequence

from ncucampaign.escaping import html_text as escape

STYLE = """
#contents{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid #e3e6ec;padding:6px 0;
display:flex;flex-wrap:wrap;gap:4px 14px;font-size:13px}
#contents a{color:#3d6fd8;text-decoration:none} #contents a:hover{text-decoration:underline}
h2[id]{scroll-margin-top:44px} li{overflow-wrap:anywhere}
.table-tools{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center;font-size:13px;color:#5b6475}
.table-tools input{font:inherit;padding:2px 6px;min-width:16em;max-width:100%}
#targets th[data-col]{cursor:pointer} #targets th[data-order="up"]::after{content:" \\25B2"}
#targets th[data-order="down"]::after{content:" \\25BC"}
"""

# Sorts the table's row groups (a <tbody> a target) by the clicked header's cell in their first rows, numbers as
# numbers and the rest as text; filters them by the words typed (all must appear in a target's rows).
SCRIPT = """<script>(() => {
  const table = document.getElementById('targets'), box = document.getElementById('targets-filter');
  if (!table || !box) return;
  const groups = () => [...table.tBodies], shown = document.getElementById('targets-shown');
  const key = (group, col) => {
    const cell = group.rows[0] && group.rows[0].cells[col], text = cell ? cell.textContent.trim() : '';
    const number = parseFloat(text.replace(/^\\[\\d+\\]\\s*/, ''));
    return [isNaN(number) ? 1 : 0, isNaN(number) ? text.toLowerCase() : number];
  };
  table.tHead.addEventListener('click', event => {
    const th = event.target.closest('th[data-col]');
    if (!th) return;
    const col = +th.dataset.col, up = th.dataset.order !== 'up';
    table.tHead.querySelectorAll('th').forEach(h => delete h.dataset.order);
    th.dataset.order = up ? 'up' : 'down';
    const sorted = groups().map(g => [key(g, col), g]).sort((a, b) =>
      (a[0][0] - b[0][0]) || (a[0][1] < b[0][1] ? -1 : a[0][1] > b[0][1] ? 1 : 0));
    (up ? sorted : sorted.reverse()).forEach(([, g]) => table.appendChild(g));
  });
  box.addEventListener('input', () => {
    const words = box.value.toLowerCase().split(/\\s+/).filter(Boolean);
    let count = 0;
    for (const g of groups()) {
      const text = g.textContent.toLowerCase(), keep = words.every(w => text.includes(w));
      g.hidden = !keep; count += keep;
    }
    shown.textContent = `${count} of ${groups().length} targets`;
  });
})();</script>"""


def contents(sections: Sequence[tuple[str, str]]) -> str:
    """The bar of links to the page's sections: (id, label) each."""
    links = " ".join(f'<a href="#{escape(anchor)}">{escape(label)}</a>' for anchor, label in sections)
    return f'<nav id="contents" aria-label="contents">{links}</nav>'


def table_tools(targets: int) -> str:
    """The filter box above the targets table, and how many targets it shows."""
    return (
        '<div class="table-tools"><label>filter <input id="targets-filter" type="search" '
        'placeholder="name, status, kernel, finding..."></label>'
        f'<span id="targets-shown">{targets} of {targets} targets</span>'
        "<span>click a column's header to sort by it</span></div>"
    )
