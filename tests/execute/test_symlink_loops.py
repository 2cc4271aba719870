"""A symlink loop is no crash: one in the application's folder leaves the workload's identity to the links' own
stamps (a shared run that needs the trace ends with every target ok), and an application command that is itself a
loop is an application that cannot start, closing every target; no exit 70 (Python 3.11's Path.resolve raises
RuntimeError on a loop, which the workload's identity did not catch)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FAKE_APP, campaign_text, fake_env, run_cli
from tests.execute.shared_campaigns import TRACE_TARGETS

pytestmark = pytest.mark.slow  # the CLI end to end


def test_a_symlink_loop_in_the_applications_folder_leaves_a_shared_run_ok(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a").symlink_to("b")
    (tmp_path / "sub" / "b").symlink_to("a")
    (tmp_path / "camp.yaml").write_text(campaign_text(TRACE_TARGETS))
    for resumed in ((), ("--resume",)):
        done = run_cli("run", "camp.yaml", "--out", "runs", *resumed, cwd=tmp_path, env=fake_env())
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    manifest = json.loads((tmp_path / "runs" / "camp" / "latest" / "manifest.json").read_text())
    assert {t["status"] for t in manifest["targets"]} == {"ok"} and manifest["state"] == "finished"
    assert any(r["kind"] == "trace" for r in manifest["shared_runs"])  # the run that met the loop


def test_an_application_command_that_is_a_symlink_loop_cannot_start(tmp_path: Path) -> None:
    shutil.copyfile(FAKE_APP, tmp_path / "app.py")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    text = campaign_text(TRACE_TARGETS).replace(campaign_text("").split("\n")[1], "  command: [./loop1]")
    (tmp_path / "camp.yaml").write_text(text)
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env())
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    manifest = json.loads((tmp_path / "runs" / "camp" / "latest" / "manifest.json").read_text())
    assert manifest["state"] == "finished" and "pending" not in {t["status"] for t in manifest["targets"]}
    assert "cannot start" in done.stdout + done.stderr
