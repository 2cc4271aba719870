"""A run directory written by an older ncucampaign (311a033, before records carried their launch count, metrics and
sections) still summarizes, compares, feeds history and findings, and resumes. The fixture is that version's run of
tests/fixtures/older_run/camp.yaml on the fake ncu: two targets split out of one shared run, a metrics-only target
and one whose kernel is not there (no_kernels)."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.conftest import FAKE_APP, FIXTURES, fake_env, run_cli

pytestmark = pytest.mark.slow  # the CLI end to end, a resume among them

SAFE = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}  # Python 3.11.4 and later: no links out


def _unpacked(tmp_path: Path) -> Path:
    with tarfile.open(FIXTURES / "older_run" / "older-311a033.tar.gz") as archive:
        archive.extractall(tmp_path, **SAFE)
    shutil.copyfile(FAKE_APP, tmp_path / "app.py")  # the campaign's `python3 app.py`, from the run's folder
    return tmp_path / "older" / "latest"


def test_an_older_run_reads_as_it_did(tmp_path: Path) -> None:
    run = _unpacked(tmp_path)
    summary = run_cli("summarize", str(run), cwd=tmp_path, env=fake_env())
    assert summary.returncode == 0 and "missing: no_kernels" in summary.stdout, summary.stderr
    findings = run_cli("findings", str(run), cwd=tmp_path, env=fake_env())
    assert "metrics_only: ncu's rules did not run" in findings.stderr  # its argv says metrics alone
    compared = run_cli("compare", str(run), str(run), cwd=tmp_path, env=fake_env())
    assert compared.returncode == 0 and "0 problems" in compared.stdout, compared.stdout + compared.stderr
    again = tmp_path / "older" / "again"
    shutil.copytree(run.resolve(), again)
    history = run_cli("history", str(run), str(again), cwd=tmp_path, env=fake_env())
    assert history.returncode == 0 and "2 runs, 6 series" in history.stdout, history.stdout + history.stderr


def test_an_older_run_resumes_what_failed_and_keeps_what_is_ok(tmp_path: Path) -> None:
    run = _unpacked(tmp_path)
    done = run_cli("run", "--resume", str(run), "--rerun-failed", cwd=tmp_path, env=fake_env())
    assert done.returncode == 1, done.stderr  # `missing` profiles nothing again
    assert "shared/1: ok, 2 launches for 2 wanted" in done.stdout  # its launch count, from its argv
    manifest = run_cli("summarize", str(run), "--format", "json", cwd=tmp_path, env=fake_env())
    assert manifest.returncode == 0
    rows = json.loads(manifest.stdout)
    statuses = {row["target"]: row["status"] for row in (rows if isinstance(rows, list) else rows["rows"])}
    assert statuses["rms_first"] == statuses["rms_second"] == statuses["metrics_only"] == "ok"
    assert statuses["missing"] == "no_kernels"
