"""The HTML report links only files inside the run directory: a manifest is data anyone may have
edited, and its paths must never become script or outside links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncucampaign.results.page.html import render_report
from ncucampaign.results.page.links import run_link
from ncucampaign.results.reading.runs import load_run
from tests.conftest import REPORT, campaign_text, fake_env, load_manifest, run_cli

ROOT, BASE = Path("/runs/camp/1"), Path("/runs/camp/1")


@pytest.mark.parametrize(
    "path",
    [
        "javascript:alert(document.domain)",
        "JaVaScRiPt:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "/etc/passwd",
        "../../other/run/manifest.json",
        "logs/../../x",
        "logs\\..\\x",
        "logs/a\nb",
        "",
    ],
)
def test_a_path_that_is_not_a_file_of_the_run_is_no_link(path: str) -> None:
    assert run_link(ROOT, BASE, path) is None


def test_a_file_of_the_run_is_a_relative_link_that_no_browser_reads_as_a_scheme() -> None:
    assert run_link(ROOT, BASE, "logs/a.log") == "./logs/a.log"
    assert run_link(ROOT, BASE, "reports/x:y.ncu-rep") == "./reports/x%3Ay.ncu-rep"  # encoded all the same
    assert run_link(ROOT, Path("/elsewhere"), "logs/a.log") == "../runs/camp/1/logs/a.log"
    assert run_link(ROOT, BASE, 'logs/"><b>.log') == "./logs/%22%3E%3Cb%3E.log"


@pytest.mark.slow
def test_a_manifest_edited_to_hold_a_script_link_gives_a_report_without_it(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n"))
    assert run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env()).returncode == 0
    run_dir, manifest = load_manifest(tmp_path / "runs")
    manifest["targets"][0]["log"] = "javascript:alert(document.domain)"
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    page = render_report(load_run(run_dir))
    assert "javascript:" not in page.replace("log: <code>javascript:", "")
    assert "log: <code>javascript:alert(document.domain)</code> (not a file in the run directory)" in page
    assert f'href="./reports/a{REPORT}"' in page


@pytest.mark.versions
@pytest.mark.slow  # runs the CLI end to end
def test_a_report_written_elsewhere_links_the_run_directory_itself_not_latest(tmp_path: Path) -> None:
    """Before the fix: `report runs/camp/latest -o elsewhere.html` linked through `latest` (which moves to the
    next run) with a path relative to where the command ran."""
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n"))
    assert run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env()).returncode == 0
    run_dir, _ = load_manifest(tmp_path / "runs")
    (tmp_path / "elsewhere").mkdir()
    done = run_cli("report", "runs/camp/latest", "-o", "elsewhere/r.html", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "elsewhere" / "r.html").read_text()
    assert f'href="{run_dir}/reports/a{REPORT}"' in page and "latest" not in page.split("<body>", 1)[1]
    beside = run_cli("report", "runs/camp/latest", cwd=tmp_path, env=fake_env())
    assert beside.returncode == 0 and f'href="./reports/a{REPORT}"' in (run_dir / "report.html").read_text()
