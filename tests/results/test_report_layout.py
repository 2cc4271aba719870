"""The HTML report laid out by Chromium from 800 to 1,400 px: the page never scrolls sideways
(a wide table scrolls in its own box), no table row is taller than 400 px, and headers and statuses
break between words only. Measured on a weighed `set: full` run of campaigns/try.yaml with the fake's
full_decode2 fixture, as the issue was."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import checkout_in, fake_env, run_cli
from tests.results.test_charts import CHROMIUM, chromium_probe

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium (Debian: apt-get install chromium)"),
]
pytest.importorskip("ncu_report", reason="results are read with ncu_report")

# Every word of a header or a status cell whose text lies on more than one line is broken mid-word.
PROBE = """<script>window.addEventListener('load', () => {
  const box = e => e.getBoundingClientRect(), broken = [];
  for (const cell of document.querySelectorAll('th, td.status-ok, td.status-bad')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (const m of n.data.matchAll(/\\S+/g)) {
        const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        if (new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1) broken.push(m[0]);
      }
    }
  }
  const rows = [...document.querySelectorAll('tr')].map(r => box(r).height);
  const targetRows = [...document.querySelectorAll('#targets tbody tr')].map(r => box(r).height);
  // a kernel name on one line, and whole as the report wrote it (shortened by it, not cut by the browser)
  const kernels = [...document.querySelectorAll('#targets td code')].filter(code => {
    const r = document.createRange(); r.selectNodeContents(code);
    const lines = new Set([...r.getClientRects()].map(x => Math.round(x.top))).size;
    return lines > 1 || code.parentElement.scrollWidth > code.parentElement.clientWidth;
  }).map(code => code.textContent);
  const table = document.querySelector('#targets'), tableBox = table.parentElement;
  const out = document.createElement('pre'); out.id = 'probe';
  out.textContent = JSON.stringify({page: document.documentElement.scrollWidth, viewport: window.innerWidth,
    table: table.scrollWidth, tableBox: tableBox.clientWidth,
    height: document.documentElement.scrollHeight, tallest: Math.max(...rows),
    tallestTarget: Math.max(...targetRows), kernels: targetRows.length, cut: kernels, broken});
  document.body.appendChild(out);
});</script>"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("layout")
    checkout_in(tmp_path, "campaigns/try.yaml", "tests/fake_ncu")
    campaign = tmp_path / "campaigns/try.yaml"
    campaign.write_text(campaign.read_text().replace("sections: [SpeedOfLight]", "set: full"))
    env = fake_env(FAKE_NCU_FIXTURE="full_decode2")
    done = run_cli("run", str(campaign), "--weigh", "--no-share", cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stdout + done.stderr  # `typo` profiles nothing, on purpose
    made = run_cli("report", "campaigns/runs/try/latest", cwd=tmp_path, env=env)
    assert made.returncode == 0, made.stderr
    return Path(made.stdout.strip())


@pytest.mark.parametrize("width", [800, 1000, 1200, 1400])
def test_the_report_reads_from_800_to_1400_px(report: Path, tmp_path: Path, width: int) -> None:
    probe = chromium_probe(report.read_text(), PROBE, width, tmp_path)
    print(f"{width} px: {probe}")  # the numbers, for the record (pytest -s)
    assert probe["page"] <= probe["viewport"], probe  # no sideways scroll of the page
    assert probe["tallest"] <= 400, probe
    # before the fix: rows of 113 px, set by the findings column out of sight, and kernel names broken
    # mid-identifier (nvjet_sm90_hsh_64x8_64x16_4x / 1_v_bz_NNT)
    assert probe["kernels"] >= 9 and probe["tallestTarget"] <= 30, probe  # one line a row: `report · log` too
    assert width < 1400 or probe["table"] <= probe["tableBox"], probe  # at 1,400 px it fits its box
    assert probe["cut"] == [], probe
    assert probe["broken"] == [], probe
    assert "no_kernels" in report.read_text()  # the statuses checked include a long one


def test_the_roofline_legend_lies_below_the_plot_not_over_its_ceilings(report: Path) -> None:
    svgs = re.findall(r'<svg[^>]*class="roofline".*?</svg>', report.read_text(), re.S)
    assert svgs
    for svg in svgs:
        bottom = number(r'data-plot="[^ ]+ ([^ ]+) ', svg)  # the x axis
        legend_top = number(r'class="legend" transform="translate\([^,]+,([^)]+)\)', svg)
        height = number(r'height="([^"]+)"', svg)
        assert bottom < legend_top < height, (bottom, legend_top, height)


def number(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    assert found is not None, pattern
    return float(found.group(1))


def test_the_duration_chart_draws_the_longest_results_not_every_one() -> None:
    """Before: 300 results drew 300 bars, a chart of 6,000 px."""
    from ncucampaign.execute.rundir.result_records import MetricValue, ResultRecord
    from ncucampaign.results.page.html_charts import DURATION_BARS, duration_chart
    from ncucampaign.spec.ncu_catalog import DURATION
    from tests.manifests import target_record

    def result(ns: float) -> ResultRecord:
        metrics = {DURATION: MetricValue(value=ns, unit="ns")}
        return ResultRecord(index=0, kernel="k", demangled="k", workload="kernel", metrics=metrics)

    charted = [(target_record(f"t{i}"), result(1000.0 + i)) for i in range(300)]
    svg = duration_chart(charted)
    drawn = re.findall(r'<rect class="bar"[^>]*><title>(t\d+) ', svg)
    assert len(drawn) == DURATION_BARS and drawn[0] == "t260" and drawn[-1] == "t299"  # the longest, in order
    assert f"the {DURATION_BARS} longest of 300" in svg and int(number(r'height="(\d+)"', svg)) < 1000


# Names as discover gives them on a published model (tests/gpu/zoo/llama_train): two instances apart only at their
# ends, and cuBLAS and cuDNN kernels of 40-60 characters. Each target cell and each bar label, as laid out.
NAMES = (
    "unrolled_elementwise_kernel",
    "unrolled_elementwise_kernel-2",
    "nvjet_sm90_tst_128x256_64x4_1x2_h_bz_coopA_NTN",
    "nvjet_sm90_tst_176x128_64x5_1x2_h_bz_TNN",
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16",
    "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT",  # these three differ in their middles only
    "nvjet_sm90_tst_256x64_64x5_2x1_v_bz_TNT",
    "nvjet_sm90_tst_64x64_64x13_2x1_v_bz_TNT",
    # moe_train's (tests/gpu/zoo/moe_train): at 16 characters a line, 12 of its 13 read cut, two as `…elementw…kernel`
    # and `…d_gather_kernel`
    "vectorized_elementwise_kernel",
    "vectorized_elementwise_kernel-2",
    "vectorized_gather_kernel",
    "DeviceReduceSingleTileKernel",
    "elementwise_kernel",
)
NAMES_PROBE = """<script>window.addEventListener('load', () => {
  const names = [...document.querySelectorAll('#targets tbody tr > td:first-child')].map(td =>
    ({text: td.textContent, cut: td.scrollWidth > td.clientWidth, lines: (() => {
      const r = document.createRange(); r.selectNodeContents(td);
      return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size; })()}));
  const svg = document.querySelector('#durations-chart');
  const labels = [...svg.querySelectorAll('text[text-anchor="end"]')].map(t => ({text: t.textContent, x: t.getBBox().x}));
  const out = document.createElement('pre'); out.id = 'probe';
  out.textContent = JSON.stringify({names, labels});
  document.body.appendChild(out);
});</script>"""


def test_long_target_names_stay_apart_and_whole_in_the_table_and_the_chart_at_800_px(tmp_path: Path) -> None:
    """Before: at 800 px both `unrolled_elementwise_kernel` targets read `unrolled_ele…` (the browser cut their
    ends), and a 59-character label began 100 px left of the duration chart. Then names were cut to 16 characters
    on one line (`elementwi…kernel`); a name of up to 48 now reads whole, wrapped at its joints."""
    from ncucampaign.execute.rundir.result_records import MetricValue, ResultRecord
    from ncucampaign.results.page.html import NAME_CELL, STYLE, _target_table
    from ncucampaign.results.page.html_charts import duration_chart
    from ncucampaign.results.page.links import TargetLinks
    from ncucampaign.spec.ncu_catalog import DURATION
    from tests.manifests import manifest_with, target_record

    def result(ns: float) -> ResultRecord:
        metrics = {DURATION: MetricValue(value=ns, unit="ns")}
        return ResultRecord(index=0, kernel="k", demangled="k", workload="kernel", metrics=metrics)

    targets = [target_record(name, results=[result(1000.0 * (i + 1))]) for i, name in enumerate(NAMES)]
    manifest = manifest_with(targets)
    table = _target_table(manifest, TargetLinks(manifest, tmp_path, lambda _: None))
    chart = duration_chart([(t, t.results[0]) for t in targets])
    page = f"<html><head><style>{STYLE}</style></head><body>{table}{chart}</body></html>"
    probe = chromium_probe(page, NAMES_PROBE, 800, tmp_path)
    names = [cell["text"] for cell in probe["names"]]
    assert len(set(names)) == len(NAMES) and not any(cell["cut"] for cell in probe["names"]), probe
    assert names[1].endswith("-2"), names  # its end is what tells it apart
    assert [n for n in names if "…" not in n] == [n for n in NAMES if not n.startswith("cudnn_")], names  # whole
    assert all(cell["lines"] <= 3 for cell in probe["names"]), probe  # three lines at most
    apart_only = [n for n in names if "…" in n]  # the one longer name shortened in the middle, as before
    assert len(apart_only) == 1 and len(apart_only[0]) == NAME_CELL, names
    # a joint breaks a line, never a word of a camelCase name (`DeviceReduce|SingleTile|Kernel`)
    assert "Device<wbr>Reduce<wbr>Single<wbr>Tile<wbr>Kernel" in table and "nvjet_<wbr>sm90_<wbr>" in table
    labels = [label["text"] for label in probe["labels"]]
    assert len(set(labels)) == len(NAMES) and all(label["x"] >= 0 for label in probe["labels"]), probe
    for name in NAMES:  # whole on hover
        assert f'title="{name}"' in table


FIX_FIRST_PROBE = """<script>window.addEventListener('load', () => {
  const out = document.createElement('pre'); out.id = 'probe';
  out.textContent = JSON.stringify({page: document.documentElement.scrollWidth, viewport: window.innerWidth});
  document.body.appendChild(out);
});</script>"""


def test_what_to_fix_first_breaks_long_kernel_names_at_800_px(tmp_path: Path) -> None:
    """llama_serve's page at 800 px (H200): 'What to fix first' named cuDNN's 104-character kernel in one piece,
    and the whole page scrolled sideways. Its names now break at their joints, as the table's do."""
    from ncucampaign.execute.rundir.result_records import FindingRecord, ResultRecord
    from ncucampaign.results.page.html import STYLE, _fix_first
    from tests.manifests import manifest_with, target_record

    cudnn = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"
    finding = FindingRecord(rule="SOLBottleneck", name="SmallGrid", section="SpeedOfLight", title="Small Grid",
                            message="This kernel grid is too small.", type="OPT")  # fmt: skip
    names = [cudnn, "nvjet_sm90_tst_48x64_64x15_4x2_h_bz_TNN", "elementwise_kernel"]
    targets = [
        target_record(
            name[:58],
            results=[ResultRecord(index=0, kernel=name, demangled=name, workload="kernel", findings=[finding])],
        )
        for name in names
    ]
    listed = _fix_first(manifest_with(targets))
    assert cudnn[:20] in listed.replace("<wbr>", "")  # the finding names it
    page = f"<html><head><style>{STYLE}</style></head><body>{listed}</body></html>"
    probe = chromium_probe(page, FIX_FIRST_PROBE, 800, tmp_path)
    assert probe["page"] <= probe["viewport"], probe
