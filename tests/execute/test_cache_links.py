"""Caches never write through a link planted where their files go, and never read one."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import fake_env, run_cli
from tests.execute.shared_campaigns import TRACE_TARGETS

pytestmark = pytest.mark.slow  # runs the CLI end to end


def plant_links(files: list[Path], victim: Path) -> None:
    for path in files:
        path.unlink()
        path.symlink_to(victim)


def test_a_link_planted_in_the_trace_cache_is_not_written_through(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(TRACE_TARGETS)
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "w"]):
        subprocess.run(["git", *command], cwd=tmp_path, check=True, capture_output=True)
    env = fake_env(XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=env).returncode == 0
    sides = sorted((tmp_path / "runs" / ".cache" / "traces").glob("*.json"))
    listings = sorted((tmp_path / "xdg" / "ncucampaign").glob("ncu-*.json"))
    assert sides and listings
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    plant_links([*sides, *listings], victim)
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert victim.read_text() == "precious\n"
    assert all(path.is_symlink() or path.read_text() != "precious\n" for path in [*sides, *listings])
