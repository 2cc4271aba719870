"""On a GPU machine with real ncu: campaigns/roofline.yaml (every kernel family with `set: full`, and
the timing pass), every number the report plots checked against ncu's own raw page of each report,
and the findings ranked by application gain with shares that sum to at most 100%."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.gpu.gpu import ROOT, manifest_of, needs_gpu, out_dir, run
from tests.results.chart_check import TOLERANCE, check_run

pytestmark = needs_gpu


def test_the_roofline_campaigns_charts_are_what_ncu_prints_and_findings_rank_by_gain(tmp_path: Path) -> None:
    runs = out_dir(tmp_path)
    done = run("run", "campaigns/roofline.yaml", "--out", str(runs), cwd=ROOT, timeout=560)
    print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")
    assert done.returncode == 0
    manifest = manifest_of(runs, "roofline")
    run_dir = (runs / "roofline" / "latest").resolve()
    assert manifest["gpu_time"]["complete"] and all(t["gpu_time_share"] for t in manifest["targets"])
    raw_dir = tmp_path / "raw"
    raw_dir.mkdir()
    for target in manifest["targets"]:
        page = subprocess.run(
            ["ncu", "--import", str(run_dir / target["report"]["path"]), "--page", "raw", "--csv", "--print-units", "base"],
            capture_output=True, text=True, timeout=300, check=True,
        ).stdout  # fmt: skip
        (raw_dir / f"{target['name']}.raw.csv").write_text(page)
    assert run("report", str(run_dir), cwd=ROOT, timeout=300).returncode == 0
    rows = check_run(run_dir, raw_dir)
    worst = max(rows, key=lambda row: row[-1])
    print(f"{len(rows)} plotted numbers; largest difference {worst}")
    assert len({row[0] for row in rows}) == len(manifest["targets"]) and worst[-1] <= TOLERANCE
    found = json.loads(run("findings", str(run_dir), "--format", "json", cwd=ROOT, timeout=300).stdout)
    gains = [group["application_gain_pct"] for group in found[:3]]
    assert all(gain is not None for gain in gains) and gains == sorted(gains, reverse=True)
    shares = {t["kernel"]: t["gpu_time_share"] for g in found for t in g["gain_terms"] if t["gpu_time_share"]}
    assert 0 < sum(shares.values()) <= 1.0
