"""Reading results: metrics in the manifest, summarize (checked against ncu's own CSV import of the
same reports), compare, and the HTML report rendered in headless Chromium."""

from __future__ import annotations

import csv
import html
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ncucampaign.execute.rundir.manifest import TargetRecord
from ncucampaign.execute.rundir.result_records import MetricValue, ResultRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.results.gate.compare import compare_runs
from ncucampaign.results.reading.records import parse_process_columns
from ncucampaign.results.reading.runs import load_run
from tests.conftest import FIXTURES, fake_env, load_manifest, run_cli, target
from tests.manifests import manifest_with, target_record

pytestmark = pytest.mark.slow  # runs the CLI end to end

pytest.importorskip("ncu_report", reason="results are read with ncu_report")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups via /proc")

# ncu --import R --page raw --csv prints durations in us; the report and ncucampaign keep ns.
TO_REPORT_UNITS = {"us": 1000.0, "ns": 1.0, "ms": 1e6, "%": 1.0, "register/thread": 1.0, "pass": 1.0}
CHECKED = (
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "launch__registers_per_thread",
    "profiler__replayer_passes",
)


def ncu_csv(name: str) -> list[dict[str, tuple[str, str]]]:
    rows = list(csv.reader((FIXTURES / "csv" / f"{name}_raw.csv").read_text().splitlines()))
    header, units = rows[0], rows[1]
    return [{h: (value, units[i]) for i, (h, value) in enumerate(zip(header, row, strict=True))} for row in rows[2:]]


@pytest.mark.parametrize("name", ["name_exact", "children_all", "nvtx_rangefilter"])
def test_summarize_matches_ncus_own_csv_import(tmp_path: Path, name: str) -> None:
    done = run_cli("summarize", str(FIXTURES / "reports" / f"{name}.ncu-rep"), "--format", "csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ours = list(csv.DictReader(io.StringIO(done.stdout)))
    expected = ncu_csv(name)
    assert {int(row["result"]) for row in ours} == {int(row["ID"][0]) for row in expected}
    for row in expected:
        result = int(row["ID"][0])
        for metric in CHECKED:
            value, unit = row[metric]
            mine = next(r for r in ours if int(r["result"]) == result and r["metric"] == metric)
            assert float(mine["value"]) == pytest.approx(
                float(value.replace(",", "")) * TO_REPORT_UNITS[unit], rel=1e-5
            ), (metric, mine)
        mine = next(r for r in ours if int(r["result"]) == result)
        assert mine["kernel"] == row["Kernel Name"][0]
        assert mine["device"] == row["Device"][0]


@pytest.mark.versions
def test_summarize_text_shows_each_result(tmp_path: Path) -> None:
    done = run_cli("summarize", str(FIXTURES / "reports" / "rangefilter_multi.ncu-rep"), cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.count("rmsnorm_kernel") == 8
    assert "decode_step/layer/mlp" in done.stdout


def test_process_columns_from_ncu_csv() -> None:
    text = (FIXTURES / "csv" / "children_all_raw.csv").read_text()
    processes = parse_process_columns(text)
    assert {i: (p.pid, p.name) for i, p in processes.items()} == {0: (1237, "python3.12"), 1: (1238, "python3.12")}


@linux_only
def test_run_records_metrics_and_marks_too_few_results_incomplete(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(
        """
        - name: one
          kernel_name: rmsnorm_kernel
          metrics: [launch__grid_size, 'regex:^launch__block_dim_']
        - name: wants_three
          kernel_name: rmsnorm_kernel
          launch_count: 3
        """
    )
    env = fake_env(FAKE_NCU_FIXTURE="demangled")  # every report holds 2 rmsnorm results
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=env)
    assert done.returncode == 1
    _, manifest = load_manifest(tmp_path / "runs")
    one = target(manifest, "one")
    assert one["status"] == "ok"  # asked for 1, the report holds 2
    first = one["results"][0]
    assert first["kernel"] == "rmsnorm_kernel" and first["grid"] == [1024, 1, 1] and first["block"] == [128, 1, 1]
    assert first["metrics"]["gpu__time_duration.sum"] == {"value": 3904.0, "unit": "ns"}
    assert first["metrics"]["launch__grid_size"]["value"] == 1024
    assert set(first["metrics"]) >= {"launch__block_dim_x", "launch__block_dim_y", "launch__block_dim_z"}
    assert "sm__warps_active.avg.pct_of_peak_sustained_active" not in first["metrics"]  # absent, not zero
    assert first["process"]["pid"] > 0 and first["process"]["name"]
    three = target(manifest, "wants_three")
    assert three["status"] == "incomplete"
    assert "2 of the 3 results" in three["message"]


def record(name: str, duration: float, kernel: str = "k", status: Status = Status.OK) -> TargetRecord:
    result = ResultRecord(
        index=0,
        kernel=kernel,
        demangled=kernel,
        workload="kernel",
        metrics={"gpu__time_duration.sum": MetricValue(value=duration, unit="ns")},
    )
    return target_record(name, status, results=[result])


def test_compare_pure() -> None:
    a = manifest_with([record("same", 100.0), record("slower", 100.0), record("faster", 100.0), record("gone", 1.0)])
    b = manifest_with(
        [record("same", 104.0), record("slower", 130.0), record("faster", 50.0), record("new", 1.0)],
        gpu="NVIDIA H100",
        ncu="2025.1.0",
    )
    comparison = compare_runs(a, b, threshold=0.1)
    by_target = {c.target: c for c in comparison.changes}
    assert not by_target["same"].flagged
    assert by_target["slower"].regression and by_target["slower"].relative == pytest.approx(0.3)
    assert by_target["faster"].flagged and not by_target["faster"].regression
    assert comparison.only_in_a == ("gone",) and comparison.only_in_b == ("new",)
    assert any("GPU differs" in note for note in comparison.notes)
    assert any("ncu version differs" in note for note in comparison.notes)
    assert [c.target for c in comparison.regressions] == ["slower"]


@pytest.mark.versions
@linux_only
def test_compare_cli_gates_on_regression(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: norm\n  kernel_name: rmsnorm_kernel\n")
    for out, fixture in (("fast", "profiler_api"), ("slow", "name_exact")):  # 2816 ns, then 3744 ns
        done = run_cli("run", str(campaign), "--out", out, cwd=tmp_path, env=fake_env(FAKE_NCU_FIXTURE=fixture))
        assert done.returncode == 0, done.stdout
    fast, slow = tmp_path / "fast" / "camp" / "latest", tmp_path / "slow" / "camp" / "latest"
    # The two fixture reports are launches in different states (grid 4 and 1024): the launch is CHANGED,
    # and the target's duration is still its time: +33% with one sample a side is SLOWER by size alone
    # (on the H200, a GEMM that cuBLAS swapped for a 34% slower kernel passed as CHANGED).
    gate = run_cli("compare", str(fast), str(slow), "--fail-on-regression", cwd=tmp_path)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "+33.0%   SLOWER" in gate.stdout and "CHANGED" in gate.stdout and "(its launch changed)" in gate.stdout
    assert "REGRESSION" not in gate.stdout  # no row is called what the gate does not fail on
    assert gate.stdout.strip().splitlines()[-1] == "gate: FAIL: 1 SLOWER (norm +33%)"
    better = run_cli("compare", str(slow), str(fast), "--fail-on-regression", "--format", "json", cwd=tmp_path)
    assert better.returncode == 0
    data = json.loads(better.stdout)
    assert data["regressions"] == 0 and data["failing"] == 0
    assert sorted(v["verdict"] for v in data["verdicts"]) == [
        "AMBIGUOUS",
        "CHANGED",
    ]  # -24.8%: under the 25% that decides alone
    changed = next(v for v in data["verdicts"] if v["verdict"] == "CHANGED")
    assert changed["samples"] == [1, 1]
    assert changed["reason"].startswith("launch rmsnorm_kernel grid 1024x1x1 block 128x1x1 NVTX ")
    strict = run_cli("compare", str(slow), str(fast), "--fail-on-regression", "--strict", cwd=tmp_path)
    assert strict.returncode == 1, strict.stdout + strict.stderr  # CHANGED fails with --strict
    duration = next(c for c in data["changes"] if c["metric"] == "gpu__time_duration.sum")
    assert duration["relative"] == pytest.approx(2816 / 3744 - 1)


def test_load_run_refuses_what_is_not_a_run(tmp_path: Path) -> None:
    from ncucampaign.errors import UsageError

    with pytest.raises(UsageError, match=r"no manifest\.json"):
        load_run(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"manifest_version": 99}))
    with pytest.raises(UsageError, match="manifest_version 99"):
        load_run(tmp_path)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@linux_only
@pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium (Debian: apt-get install chromium)")
def test_html_report_renders_its_charts_in_headless_chromium(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(
        "- name: norm\n  kernel_name: rmsnorm_kernel\n  launch_count: 2\n- name: typo\n  kernel_name: nope\n"
    )
    run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=fake_env(FAKE_NCU_FIXTURE="demangled"))
    done = run_cli("report", "runs/camp/latest", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = Path(done.stdout.strip())
    assert page.is_file()
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [CHROMIUM, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    assert '<svg id="durations-chart"' in dom and '<svg id="throughput-chart"' in dom
    assert dom.count('class="bar"') == 2  # the two results of "norm"
    assert dom.count('class="point"') == 2
    assert dom.count('class="report-link"') == 1 and dom.count('class="log-link"') == 2
    assert "no_kernels" in dom
    assert dom.index("What to fix first") < dom.index('<h2 id="targets-table">') and "<b>Small Grid</b>" in dom
    attention = dom[dom.index("Targets that need attention") :]
    hints = json.loads((page.parent / "manifest.json").read_text())["targets"][1]["diagnosis"]
    assert hints and all(html.escape(hint, quote=False) in attention for hint in hints)
    assert "http://" not in page.read_text().replace("http://www.w3.org/2000/svg", "")  # nothing to fetch
    shot = tmp_path / "report.png"
    subprocess.run(
        [CHROMIUM, *flags, "--window-size=1300,1000", f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.is_file() and shot.stat().st_size > 10_000
