"""What a newcomer trips on in the first hour (issue 22), each through the real CLI."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import FAKE_NCU_DIR, ROOT, campaign_text, fake_env, load_manifest, run_cli

pytestmark = pytest.mark.slow  # runs the CLI end to end

TWO = "- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  kernel_name: rmsnorm_kernel\n  launch_skip: 1\n"


@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_campaign_file_after_only_is_the_file_not_a_target_name(tmp_path: Path, command: str) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text(TWO))
    done = run_cli(command, "--only", "b", "camp.yaml", *(["--out", "runs"] if command == "run" else []), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    if command == "plan":
        assert "[1/1] b" in done.stdout and "# [1/1] a" not in done.stdout
    else:
        assert [t["name"] for t in load_manifest(tmp_path / "runs")[1]["targets"]] == ["b"]
    alone = run_cli(command, "--only", "camp.yaml", cwd=tmp_path)
    assert alone.returncode == 2 and "--only needs at least one target name" in alone.stderr


def test_gpus_that_cannot_be_checked_are_said_to_be_taken_as_given(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n"))
    bin_dir = tmp_path / "bin"  # the fake ncu without the fake nvidia-smi beside it
    bin_dir.mkdir()
    (bin_dir / "ncu").symlink_to(FAKE_NCU_DIR / "ncu")
    env = fake_env()
    env["PATH"] = os.pathsep.join([str(bin_dir), *(p for p in env["PATH"].split(os.pathsep) if p != str(FAKE_NCU_DIR))])
    env.pop("CUDA_VISIBLE_DEVICES", None)
    done = run_cli("run", "camp.yaml", "--gpus", "0,7", "--out", "runs", cwd=tmp_path, env=env)
    assert "--gpus 0,7: cannot check that these GPUs exist" in done.stderr, done.stderr


def test_the_readme_quotes_off_wherever_a_campaign_key_takes_it() -> None:
    readme = (ROOT / "README.md").read_text()
    for line in re.findall(r"`([a-z_]+: off)`", readme):
        assert yaml.safe_load(line) != {line.split(":")[0]: "off"}, f"README writes `{line}`: YAML reads it as false"
    assert "`share: 'off'`" in readme
