"""The page of 1,000 targets in headless Chromium at 800 and 1,400 px (round 7, item 13): every section one click
from the contents bar that stays at the top, the targets table sorted by a header and filtered by what is typed,
no sideways scroll; and the same page at 10 targets."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import campaign_text, run_cli
from tests.results.test_charts import CHROMIUM, chromium_probe

pytestmark = [pytest.mark.slow, pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium (apt: chromium)")]

PROBE = """<script>window.addEventListener('load', () => {
  const out = {}, nav = document.getElementById('contents'), table = document.getElementById('targets');
  const firsts = () => [...table.tBodies].filter(g => !g.hidden).map(g => g.rows[0].cells[0].title);
  out.links = [...nav.querySelectorAll('a')].map(a => a.getAttribute('href'));
  out.dead = out.links.filter(h => !document.getElementById(h.slice(1)));
  out.before = firsts().slice(0, 3);
  table.tHead.querySelector('th[data-col="0"]').click();
  out.up = firsts();
  table.tHead.querySelector('th[data-col="0"]').click();
  out.down = firsts().slice(0, 3);
  const box = document.getElementById('targets-filter');
  box.value = 't099'; box.dispatchEvent(new Event('input'));
  out.filtered = firsts(); out.said = document.getElementById('targets-shown').textContent;
  box.value = ''; box.dispatchEvent(new Event('input'));
  out.scroll = document.documentElement.scrollWidth; out.width = window.innerWidth;
  out.height = document.documentElement.scrollHeight;
  nav.querySelector('a[href="#charts"]').click();
  out.jumped = window.scrollY; out.navTop = nav.getBoundingClientRect().top;
  out.chartsTop = document.getElementById('charts').getBoundingClientRect().top;
  const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});</script>"""


def page_of(tmp_path: Path, targets: int) -> str:
    """The page of a run of `targets` targets (one small run's records, repeated under other names, shuffled)."""
    (tmp_path / "camp.yaml").write_text(
        campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  kernel_name: nope\n")
    )
    run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path)
    run = (tmp_path / "runs" / "camp" / "latest").resolve()
    data = json.loads((run / "manifest.json").read_text())
    records = [{**data["targets"][i % 2], "name": f"t{i:04d}", "target": f"t{i:04d}"} for i in range(targets)]
    random.Random(1).shuffle(records)
    data["targets"] = records
    (run / "manifest.json").write_text(json.dumps(data))
    done = run_cli("report", str(run), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return (run / "report.html").read_text()


@pytest.mark.parametrize("width", [800, 1400])
def test_a_page_of_1000_targets_is_navigable_sortable_and_filterable(tmp_path: Path, width: int) -> None:
    probe: dict[str, Any] = chromium_probe(page_of(tmp_path, 1000), PROBE, width, tmp_path)
    assert probe["dead"] == [] and {"#targets-table", "#charts", "#roofline", "#fix-first"} <= set(probe["links"])
    assert probe["up"] == sorted(probe["up"]) and len(probe["up"]) == 1000 and probe["before"] != probe["up"][:3]
    assert probe["down"] == ["t0999", "t0998", "t0997"]
    assert probe["filtered"] == sorted(f"t099{i}" for i in range(10))[::-1] and probe["said"] == "10 of 1000 targets"
    assert probe["scroll"] <= probe["width"], probe  # no sideways scroll
    assert probe["jumped"] > 5000 and probe["navTop"] == 0 and abs(probe["chartsTop"] - 44) < 60, probe


def test_a_page_of_10_targets_keeps_its_bar_and_tools(tmp_path: Path) -> None:
    probe: dict[str, Any] = chromium_probe(page_of(tmp_path, 10), PROBE, 1400, tmp_path)
    assert probe["dead"] == [] and len(probe["up"]) == 10 and probe["said"] == "0 of 10 targets"
    assert probe["scroll"] <= probe["width"]
