"""Numbers no campaign means, and files nested beyond reason, are clear errors (exit 2), never an
internal error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ncucampaign.errors import CampaignError
from ncucampaign.plan.expand import build_plan
from ncucampaign.spec.loader import parse_campaign
from tests.conftest import campaign_text, fake_env, run_cli

HUGE_DECIMAL = "1" + "0" * 309  # beyond a float
HUGE_HEX = "0x" + "f" * 4400  # beyond the 4,300 digits Python prints


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (f"    timeout: {HUGE_DECIMAL}", "at most a year"),
        (f"    retry_delay: {HUGE_DECIMAL}", "at most a year"),
        ("    stop_grace: '9" + "9" * 400 + "h'", "at most a year"),
        (f"    launch_count: {HUGE_HEX}", "must be at most"),
        (f"    launch_skip: {HUGE_HEX}", "must be at most"),
        (f"    devices: [{HUGE_HEX}]", "must be at most"),
    ],
)
def test_a_huge_number_is_a_clear_problem(line: str, message: str) -> None:
    text = f"application: {{command: x}}\ntargets:\n  - name: a\n    kernel_name: k\n{line}\n"
    with pytest.raises(CampaignError) as caught:
        build_plan(parse_campaign(text, Path("c.yaml")))
    assert message in caught.value.render("")


@pytest.mark.slow
def test_a_deeply_nested_array_task_list_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    for name, body in (("sbatch", "echo 4242"), ("squeue", "exit 0")):
        (tmp_path / "bin" / name).write_text(f"#!/bin/sh\n{body}\n")
        (tmp_path / "bin" / name).chmod(0o755)
    env = fake_env()
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n"))
    assert run_cli("run", "camp.yaml", "--slurm", "--out", "runs", cwd=tmp_path, env=env).returncode == 0
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()
    (run_dir / "slurm" / "array-1.json").write_text("[" * 100_000 + "]" * 100_000)
    done = subprocess.run(
        [sys.executable, "-m", "ncucampaign", "slurm-task", str(run_dir), "--array", "1", "--index", "0"],
        cwd=tmp_path,
        env={**env, "SLURM_ARRAY_TASK_ID": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "cannot read the array's tasks" in done.stderr, done.stderr
