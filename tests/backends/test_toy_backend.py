"""A new batch system is one folder and one line in the table: the toy of tests/backends/toy/ (its system, and
entry.py's line) plans and runs a campaign on the fake ncu through the same commands as Slurm and Kubernetes,
with no change to anything outside its folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.backends.toy.system import ENTRY
from tests.conftest import campaign_text, fake_env

pytestmark = pytest.mark.slow  # the CLI end to end, a task process per target

THREE = campaign_text(
    "- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  kernel_name: rmsnorm_kernel\n  launch_skip: 1\n"
    "- name: c\n  kernel_name: rmsnorm_kernel\n  launch_skip: 2\n"
)


def toy_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ENTRY), *args], cwd=cwd, env=fake_env(), capture_output=True, text=True, timeout=300
    )


def test_a_toy_batch_system_plans_and_runs_a_campaign(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(THREE)
    plan = toy_cli("plan", "camp.yaml", "--toy", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.count("toy-task ") == 1 and "--array 1 --index 0" in plan.stdout  # one shared task
    done = toy_cli("run", "camp.yaml", "--toy", "--wait", "--out", "runs", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads((tmp_path / "runs" / "camp" / "latest" / "manifest.json").read_text())
    assert [(s["backend"], s["job_id"], s["tasks"]) for s in manifest["submissions"]] == [
        ("toy", "toy-1", [["a", "b", "c"]])
    ]
    placed = {t["name"]: (t["status"], t["placement"]["job_id"], t["obtained"]["how"]) for t in manifest["targets"]}
    assert placed == {name: ("ok", "toy-1-0", "shared") for name in "abc"}
    assert "toy task" in done.stdout  # the final table's column, from its words
    alone = toy_cli("run", "camp.yaml", "--toy", "--wait", "--no-share", "--out", "apart", cwd=tmp_path)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    submissions = json.loads((tmp_path / "apart" / "camp" / "latest" / "manifest.json").read_text())["submissions"]
    assert [s["tasks"] for s in submissions] == [[["a"], ["b"]], [["c"]]]  # two tasks a submission, as its Sender says
