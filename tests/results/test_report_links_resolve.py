"""Every link of a run's page resolves (issue 80): at 300 and 1,000 targets read out of unions, every href of
report.html names a file in the run directory. Before, every target's `log` link pointed to a log it never had (no
attempt of its own: 300 of 300, 1,000 of 1,000), and its `report` link opened the union's file of 250 results
without saying which were its own or how to have a report of its own."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.benchmarks.scale import campaign
from tests.conftest import fake_env, load_manifest, run_cli

pytestmark = pytest.mark.slow  # runs of hundreds of targets, then their page


@pytest.mark.parametrize("targets", [300, 1000])
def test_every_link_of_the_page_names_a_file_of_the_run(tmp_path: Path, targets: int) -> None:
    (tmp_path / "scale.yaml").write_text(campaign(targets))
    env = fake_env(FAKE_NCU_STATE=str(tmp_path / "fake-state"))
    assert run_cli("run", "scale.yaml", "--out", "runs", cwd=tmp_path, env=env).returncode == 0
    run_dir, manifest = load_manifest(tmp_path / "runs", "scale")
    done = run_cli("report", str(run_dir), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    page = (run_dir / "report.html").read_text()
    hrefs = [unquote(unescape(h)) for h in re.findall(r'href="([^"]+)"', page)]
    anchors = set(re.findall(r' id="([^"]+)"', page))
    dead = [h for h in hrefs if not (h[1:] in anchors if h.startswith("#") else (run_dir / h).is_file())]
    assert len(hrefs) > targets and not dead, dead[:5]
    read_out = [t for t in manifest["targets"] if t["report"] and t["report"]["ids"] is not None]
    assert read_out, "the scale pool's targets are read out of unions"
    first = read_out[0]["name"]
    assert f"ncucampaign export {run_dir} --only {first}" in unescape(page)  # how to have a report of its own
    assert page.count("log of its shared run") == len(read_out)
