"""The report's roofline, memory chart and warp states: drawn from a real `set: full` report
of the H200 (tests/fixtures/reports/full_decode2.ncu-rep, made by tests/fixtures/charts/capture.sh),
every plotted number checked against ncu's own raw page of that report, every point checked to lie
where its numbers say, in the SVG and as Chromium renders it."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, campaign_text, fake_env, run_cli
from tests.results.chart_check import NS, TOLERANCE, check_run, svgs

pytestmark = pytest.mark.slow  # runs the CLI end to end
pytest.importorskip("ncu_report", reason="results are read with ncu_report")

RAW = FIXTURES / "charts" / "full_decode2.raw.csv"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.fixture(scope="module")
def charted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A weighed run whose one target holds the fixture's two results (a GEMM and the rmsnorm); one
    for the module: the tests only read it (the Chromium test edits a copy)."""
    tmp_path = tmp_path_factory.mktemp("charted")
    campaign = tmp_path / "camp.yaml"
    text = campaign_text("- name: full\n  kernel_name: regex:nvjet|rmsnorm\n  launch_count: 2\n  set: full\n")
    campaign.write_text(text.replace("  sections: SpeedOfLight\n", "") + "weigh: true\n")
    env = fake_env(FAKE_NCU_FIXTURE="full_decode2")
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    report = run_cli("report", "runs/camp/latest", cwd=tmp_path, env=env)
    assert report.returncode == 0, report.stderr
    return (tmp_path / "runs/camp/latest").resolve()


def test_every_plotted_number_is_what_ncus_raw_page_says(charted_run: Path, tmp_path: Path) -> None:
    raw_dir = tmp_path / "raw"
    raw_dir.mkdir()
    shutil.copy(RAW, raw_dir / "full.raw.csv")
    rows = check_run(charted_run, raw_dir)
    kinds = {what.split()[0] for _, what, *_ in rows}
    assert kinds == {"work", "peak", "intensity", "bandwidth", "bytes", "state"}
    assert len({target for target, *_ in rows}) == 2 and len(rows) > 40
    worst = max(rows, key=lambda row: row[-1])
    assert worst[-1] <= TOLERANCE, worst


def _log_position(value: float, low: float, high: float, start: float, end: float) -> float:
    return start + (math.log10(value) - math.log10(low)) / (math.log10(high) - math.log10(low)) * (end - start)


def test_every_point_lies_where_its_numbers_say_in_the_svg(charted_run: Path) -> None:
    charts = svgs((charted_run / "report.html").read_text())  # each parsed as XML: well formed
    rooflines = [svg for key, svg in charts.items() if key.startswith(("roofline-", "campaign-roofline"))]
    assert len(rooflines) == 3  # the campaign's and one per result
    checked = 0
    for svg in rooflines:
        x_low, x_high = map(float, svg.get("data-x-range", "").split())
        y_low, y_high = map(float, svg.get("data-y-range", "").split())
        x0, y0, x1, y1 = map(float, svg.get("data-plot", "").split())
        for circle in svg.iter(f"{NS}circle"):
            if circle.get("data-work") is None:
                continue
            x = _log_position(float(circle.get("data-intensity", "")), x_low, x_high, x0, x1)
            y = _log_position(float(circle.get("data-work", "")), y_low, y_high, y0, y1)
            assert abs(float(circle.get("cx", "")) - x) < 0.01 and abs(float(circle.get("cy", "")) - y) < 0.01
            assert x0 <= x <= x1 and y1 <= y <= y0  # inside the plot
            checked += 1
    assert checked >= 8  # two levels of every point, in the campaign chart and the result's own
    for key in [k for k in charts if k.startswith(("memory-", "warp-states-"))]:
        bars = charts[key]
        left, right = map(float, bars.get("data-plot", "").split())
        top = float(bars.get("data-max", ""))
        for rect in bars.iter(f"{NS}rect"):
            assert float(rect.get("width", "")) == pytest.approx(
                (right - left) * float(rect.get("data-value", "")) / top, abs=0.01
            )


def test_findings_json_and_load_run_carry_the_numbers_the_charts_plot(charted_run: Path) -> None:
    from ncucampaign import load_run

    charts = load_run(charted_run).charts()
    gemm = next(c for c in charts if c["kernel"].startswith("nvjet"))
    svg = svgs((charted_run / "report.html").read_text())["roofline-full-0-"]
    drawn = {float(c.get("data-work", "")) for c in svg.iter(f"{NS}circle") if c.get("data-work")}
    assert {p["work_per_s"] for p in gemm["roofline"]["points"]} == drawn
    found = run_cli("findings", str(charted_run), "--format", "json", cwd=charted_run)
    occurrence = next(o for g in json.loads(found.stdout) for o in g["occurrences"] if o["kernel"] == gemm["kernel"])
    assert occurrence["charts"]["roofline"] == gemm["roofline"]


FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)  # fmt: skip

# Measures the page as Chromium laid it out: each roofline point's rendered centre against where the
# rendered decade ticks put its numbers, each bar's rendered width, the page's width, the tallest row.
PROBE = """<script>window.addEventListener('load', () => {
  const box = e => e.getBoundingClientRect(), worst = {x: 0, y: 0, bar: 0}; let points = 0;
  const at = (ticks, value, axis) => {
    const t = [...ticks].map(l => [Math.log10(+l.dataset.value), axis === 'x' ? box(l).left : box(l).top]);
    const [a, b] = [t[0], t[t.length - 1]];
    return a[1] + (Math.log10(value) - a[0]) / (b[0] - a[0]) * (b[1] - a[1]);
  };
  for (const svg of document.querySelectorAll('svg.roofline')) {
    for (const c of svg.querySelectorAll('circle[data-work]')) {
      const r = box(c), cx = r.left + r.width / 2, cy = r.top + r.height / 2;
      worst.x = Math.max(worst.x, Math.abs(cx - at(svg.querySelectorAll('.tick-x'), +c.dataset.intensity, 'x')));
      worst.y = Math.max(worst.y, Math.abs(cy - at(svg.querySelectorAll('.tick-y'), +c.dataset.work, 'y')));
      points++;
    }
  }
  for (const svg of document.querySelectorAll('svg.bars')) {
    const [left, right] = svg.dataset.plot.split(' ').map(Number), top = +svg.dataset.max;
    for (const r of svg.querySelectorAll('rect.bar')) worst.bar = Math.max(worst.bar,
      Math.abs(box(r).width - (right - left) * r.dataset.value / top));
  }
  const rows = [...document.querySelectorAll('#targets tbody tr')].map(r => box(r).height);
  const out = document.createElement('pre'); out.id = 'probe';
  out.textContent = JSON.stringify({points, worst, scroll: document.documentElement.scrollWidth,
    table: box(document.getElementById('targets')).right, tallest: Math.max(...rows)});
  document.body.appendChild(out);
});</script>"""


def chromium_probe(html: str, probe: str, width: int, tmp_path: Path) -> dict[str, Any]:
    """What `probe` (a script that writes JSON into <pre id="probe"> on load) measured of `html` laid
    out by headless Chromium `width` px wide."""
    page = tmp_path / "probe.html"
    page.write_text(html.replace("</body>", probe + "</body>"))
    assert CHROMIUM is not None
    dom = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},1000",
         "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom)
    assert found is not None, dom[-2000:]
    measured: dict[str, Any] = json.loads(found.group(1))
    return measured


@pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium (Debian: apt-get install chromium)")
def test_chromium_draws_every_point_where_its_numbers_say_and_the_page_fits_1400_px(
    charted_run: Path, tmp_path: Path
) -> None:
    # The names that made the table wider than the page: PyTorch's templated kernels, one unbroken word.
    charted_run = Path(shutil.copytree(charted_run, tmp_path / "run", symlinks=True))
    manifest = json.loads((charted_run / "manifest.json").read_text())
    long_name = "at::vectorized_elementwise_kernel<8,at::(anonymous_namespace)::silu_kernel::lambda>" * 4
    manifest["targets"][0]["results"][1].update(kernel=long_name, demangled=f"void {long_name}(int)")
    (charted_run / "manifest.json").write_text(json.dumps(manifest))
    assert run_cli("report", str(charted_run), cwd=tmp_path).returncode == 0
    probe = chromium_probe((charted_run / "report.html").read_text(), PROBE, 1400, tmp_path)
    assert probe["points"] >= 8
    assert probe["worst"]["x"] < 0.5 and probe["worst"]["y"] < 0.5 and probe["worst"]["bar"] < 0.5, probe
    assert probe["scroll"] <= 1400 and probe["table"] <= 1400, probe  # no horizontal scroll
    assert probe["tallest"] < 300, probe  # no tall empty block after a row
    shot = tmp_path / "charts.png"
    subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,2600",
         f"--screenshot={shot}", (charted_run / "report.html").as_uri()],
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert shot.is_file() and shot.stat().st_size > 10_000


def test_a_report_without_chart_data_says_so_instead_of_drawing_empty_charts(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: norm\n  kernel_name: rmsnorm_kernel\n")
    run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    page = Path(run_cli("report", "runs/camp/latest", cwd=tmp_path).stdout.strip()).read_text()
    assert "No roofline: no result holds the roofline metrics" in page
    assert "no GPU-time share known" in page
    assert "<h2>Charts per result</h2>" not in page  # no heading over nothing
    assert not [key for key in svgs(page) if key.startswith(("roofline-", "memory-", "warp-states-"))]
    ET.fromstring(re.search(r"<svg id=\"durations-chart\".*?</svg>", page, re.S).group(0))  # type: ignore[union-attr]


def test_pm_sampling_timelines_plot_the_recorded_samples_around_the_kernels_activity(charted_run: Path) -> None:
    manifest = json.loads((charted_run / "manifest.json").read_text())
    charts = svgs((charted_run / "report.html").read_text())
    for result in manifest["targets"][0]["results"]:
        svg = charts[f"pm-sampling-full-{result['index']}-"]
        start, end = map(float, svg.get("data-t-range", "").split())
        x0, y0, x1, y1 = map(float, svg.get("data-plot", "").split())
        series = {s["label"]: s["samples"] for s in result["pm_samples"]}
        assert set(series) == {"SM instructions %", "tensor pipe %", "L2 throughput %", "DRAM throughput %"}
        busy = [t for t, v in series["SM instructions %"] if v > 0]
        assert busy and start <= busy[0] and busy[-1] <= end  # the kernel's activity is in the window
        assert end - start < series["SM instructions %"][-1][0] / 4  # and the idle samples around it are not
        for line in svg.iter(f"{NS}polyline"):
            kept = [(t, v) for t, v in series[line.get("data-label", "")] if start <= t <= end]
            drawn = [tuple(map(float, pair.split(","))) for pair in line.get("points", "").split()]
            assert len(drawn) == len(kept) >= 3
            for (x, y), (t, v) in zip(drawn, kept, strict=True):
                assert x == pytest.approx(x0 + (x1 - x0) * (t - start) / (end - start), abs=0.01)
                assert y == pytest.approx(y0 - (y0 - y1) * min(v, 100.0) / 100, abs=0.01)


def test_a_manifest_with_impossible_chart_numbers_still_renders_and_draws_only_what_it_can(
    charted_run: Path, tmp_path: Path
) -> None:
    """A manifest is data: an edited one may hold negative, zero or huge values and empty samples."""
    run = Path(shutil.copytree(charted_run, tmp_path / "run", symlinks=True))
    manifest = json.loads((run / "manifest.json").read_text())
    first, second = manifest["targets"][0]["results"]
    for name, metric in first["metrics"].items():
        metric["value"] = -1.0 if "per_second" in name or "per_cycle" in name else 0.0
    for metric in second["metrics"].values():
        metric["value"] = 1e308 if isinstance(metric["value"], float) else metric["value"]
    first["pm_samples"] = [
        {"label": "SM instructions %", "samples": []},
        {"label": "x", "samples": [[0, -5], [1, 1e308]]},
    ]
    (run / "manifest.json").write_text(json.dumps(manifest))
    done = run_cli("report", str(run), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for svg in svgs((run / "report.html").read_text()).values():  # every chart still well formed
        for circle in svg.iter(f"{NS}circle"):
            assert math.isfinite(float(circle.get("cx", "nan"))) and math.isfinite(float(circle.get("cy", "nan")))


@pytest.mark.parametrize("odd", [math.nan, math.inf, -math.inf])
def test_a_manifest_holding_nan_or_inf_draws_no_nan_or_inf_in_any_svg(
    charted_run: Path, tmp_path: Path, odd: float
) -> None:
    """Before the fix: a NaN or infinite metric drew width="nan" in the report's SVG."""
    run = Path(shutil.copytree(charted_run, tmp_path / "run", symlinks=True))
    manifest = json.loads((run / "manifest.json").read_text())
    for result in manifest["targets"][0]["results"]:
        for metric in result["metrics"].values():
            if isinstance(metric["value"], float | int) and not isinstance(metric["value"], bool):
                metric["value"] = odd
        result["pm_samples"] = [{"label": "SM %", "samples": [[0, odd], [odd, 5], [2, 7], [3, 9]]}]
    (run / "manifest.json").write_text(json.dumps(manifest))  # Python writes NaN and Infinity as JSON does not
    done = run_cli("report", str(run), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name, svg in svgs((run / "report.html").read_text()).items():
        for element in svg.iter():
            for attribute, value in element.attrib.items():
                if attribute.startswith("data-") or attribute in (
                    "id",
                    "class",
                    "aria-label",
                    "role",
                    "fill",
                    "stroke",
                ):
                    continue
                assert not re.search(r"(?i)nan|inf", value), (name, element.tag, attribute, value)
