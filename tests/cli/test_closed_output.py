"""A command started with its standard output or error closed (`>&-`) does its work and exits as
usual: the output goes nowhere, as into a closed pipe."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, campaign_text, fake_env, load_manifest

pytestmark = pytest.mark.slow  # runs the CLI end to end


def closed(command: str, cwd: Path, close: str = ">&-") -> subprocess.CompletedProcess[str]:
    line = f"{shlex.quote(sys.executable)} -m ncucampaign {command} {close}"
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=fake_env(), capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("close", [">&-", "2>&-", ">&- 2>&-"])
def test_validate_with_a_closed_output_is_exit_0(tmp_path: Path, close: str) -> None:
    done = closed(f"validate {shlex.quote(str(ROOT / 'campaigns' / 'decode.yaml'))}", tmp_path, close)
    assert done.returncode == 0, done.stderr


def test_run_with_a_closed_output_runs_and_records(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n"))
    done = closed("run camp.yaml --out runs", tmp_path)
    assert done.returncode == 0, done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    assert manifest["state"] == "finished" and manifest["targets"][0]["status"] == "ok"
