"""A run directory written by an older ncucampaign (311a033, before records carried their launch count, metrics and
sections) still summarizes, compares, feeds history and findings, and resumes. The fixture is that version's run of
tests/fixtures/older_run/camp.yaml on the fake ncu: two targets split out of one shared run, a metrics-only target
and one whose kernel is not there (no_kernels), made in /tmp/oldrun/work and unpacked as if made in the test's folder
(tests/run_archives.py)."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import FAKE_APP, FIXTURES, fake_env, run_cli
from tests.run_archives import unpack_run

pytestmark = pytest.mark.slow  # the CLI end to end, a resume among them

ARCHIVE = FIXTURES / "older_run" / "older-311a033.tar.gz"


def _unpacked(tmp_path: Path) -> Path:
    """The run as if its campaign had been run from `tmp_path` (its runs under runs/, as they were)."""
    unpack_run(ARCHIVE, tmp_path)
    shutil.copyfile(FIXTURES / "older_run" / "camp.yaml", tmp_path / "camp.yaml")
    shutil.copyfile(FAKE_APP, tmp_path / "app.py")  # the campaign's `python3 app.py`, from the run's folder
    return tmp_path / "runs" / "older" / "latest"


def _absolute_paths(run: Path) -> set[str]:
    """The absolute paths the run's manifest, plan and logs name, but for the fake ncu's own."""
    found: set[str] = set()
    for path in run.resolve().rglob("*"):
        if path.is_file() and path.suffix in {".json", ".log", ".yaml"}:
            found.update(re.findall(r"(?<![\w.])/[\w.-]+(?:/[\w.%-]+)*", path.read_text()))
    return found


def test_an_older_run_reads_as_it_did(tmp_path: Path) -> None:
    run = _unpacked(tmp_path)
    summary = run_cli("summarize", str(run), cwd=tmp_path, env=fake_env())
    assert summary.returncode == 0 and "missing: no_kernels" in summary.stdout, summary.stderr
    findings = run_cli("findings", str(run), cwd=tmp_path, env=fake_env())
    assert "metrics_only: ncu's rules did not run" in findings.stdout  # its argv says metrics alone
    compared = run_cli("compare", str(run), str(run), cwd=tmp_path, env=fake_env())
    assert compared.returncode == 0 and "0 problems" in compared.stdout, compared.stdout + compared.stderr
    again = tmp_path / "older" / "again"
    shutil.copytree(run.resolve(), again)
    history = run_cli("history", str(run), str(again), cwd=tmp_path, env=fake_env())
    assert history.returncode == 0 and "2 runs, 6 series" in history.stdout, history.stdout + history.stderr


def test_an_older_run_unpacks_naming_only_the_tests_folder(tmp_path: Path) -> None:
    """What lets the resume below pass on any machine: no path of the machine that made the run is left."""
    run = _unpacked(tmp_path)
    here = (str(tmp_path), str(FAKE_APP.parent), sys.executable)  # the test's folder, the fake ncu, this Python
    outside = {path for path in _absolute_paths(run) if not path.startswith(here)}
    assert not outside, f"the unpacked run names paths outside the test's folder: {sorted(outside)[:5]}"
    assert str(tmp_path / "camp.yaml") in (run / "manifest.json").read_text()


def test_an_older_run_resumes_what_failed_and_keeps_what_is_ok(tmp_path: Path) -> None:
    """Its seal is an older version's plain digest, which anyone could recompute: resumed with its FILE named
    (round 7, item 5: its copy is run only under a seal of this user's key)."""
    run = _unpacked(tmp_path)
    alone = run_cli("run", "--resume", str(run), "--rerun-failed", cwd=tmp_path, env=fake_env())
    assert alone.returncode == 2 and "not sealed by you" in alone.stderr, alone.stderr
    done = run_cli(
        "run", str(tmp_path / "camp.yaml"), "--resume", str(run), "--rerun-failed", cwd=tmp_path, env=fake_env()
    )
    assert done.returncode == 1, done.stderr  # `missing` profiles nothing again
    assert "shared/1: ok, 2 launches for 2 wanted" in done.stdout  # its launch count, from its argv
    manifest = run_cli("summarize", str(run), "--format", "json", cwd=tmp_path, env=fake_env())
    assert manifest.returncode == 0
    rows = json.loads(manifest.stdout)
    statuses = {row["target"]: row["status"] for row in (rows if isinstance(rows, list) else rows["rows"])}
    assert statuses["rms_first"] == statuses["rms_second"] == statuses["metrics_only"] == "ok"
    assert statuses["missing"] == "no_kernels"


def test_an_older_run_moved_elsewhere_resumes_with_its_campaign_file_named(tmp_path: Path) -> None:
    """As a user would who copied a run from another machine: its manifest names a folder not on this one, so
    `--resume RUN` alone says to name the file, and `run FILE --resume RUN` resumes."""
    elsewhere = tmp_path / "elsewhere"  # the other machine's folder, gone once the run is moved from it
    unpack_run(ARCHIVE, elsewhere)
    (elsewhere / "runs").rename(tmp_path / "runs")
    elsewhere.rmdir()
    shutil.copyfile(FIXTURES / "older_run" / "camp.yaml", tmp_path / "camp.yaml")
    shutil.copyfile(FAKE_APP, tmp_path / "app.py")
    run = tmp_path / "runs" / "older" / "latest"
    alone = run_cli("run", "--resume", str(run), "--rerun-failed", cwd=tmp_path, env=fake_env())
    assert alone.returncode == 2 and "name the campaign FILE to resume with" in alone.stderr, alone.stderr
    named = run_cli("run", "camp.yaml", "--resume", str(run), "--rerun-failed", cwd=tmp_path, env=fake_env())
    assert named.returncode == 1, named.stdout + named.stderr  # `missing` profiles nothing again
    rows = json.loads(run_cli("summarize", str(run), "--format", "json", cwd=tmp_path, env=fake_env()).stdout)
    statuses = {row["target"]: row["status"] for row in (rows if isinstance(rows, list) else rows["rows"])}
    assert statuses == {"rms_first": "ok", "rms_second": "ok", "metrics_only": "ok", "missing": "no_kernels"}
