"""No silent configuration: ncu reads config.ncu-cfg from the working directory (and renames
kernels from ncu-kernel-renames.yaml) unless told not to, so a stray file beside the workload changed
every command a campaign pins. Every command is now run with --config-file off and --rename-kernels
off unless the campaign names a file; the manifest records the choice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FAKE_APP, fake_env, load_manifest
from tests.execute.shared_campaigns import TRACE_TARGETS, profiled_launch, run

pytestmark = pytest.mark.slow  # runs the CLI end to end

# NVIDIA's format (CLI reference, "Config file"; ../shared/ncu/reference.md section 6): sections named
# after the mode, `option = value` lines, ';' comments. This one would move every target's window and
# change how every report is listed.
STRAY = """[Launch-and-attach]
; left behind by an earlier experiment
--launch-skip = 3
--section = Occupancy
[Import]
--print-kernel-base = function
"""


def launches(run_dir: Path, manifest: dict) -> dict[str, list[tuple[str, ...]]]:
    return {t["name"]: profiled_launch(run_dir, t["name"]) for t in manifest["targets"] if t["status"] == "ok"}


@pytest.mark.parametrize("sharing", [[], ["--no-share"]], ids=["shared", "alone"])
def test_a_stray_config_file_beside_the_workload_changes_no_result(
    tmp_path: Path, write_campaign, sharing: list[str]
) -> None:
    clean, planted = tmp_path / "clean", tmp_path / "planted"
    for folder in (clean, planted):
        folder.mkdir()
        (folder / "camp.yaml").write_text(write_campaign(TRACE_TARGETS).read_text())
    (planted / "config.ncu-cfg").write_text(STRAY)
    for folder in (clean, planted):
        done = run(folder / "camp.yaml", *sharing)
        assert done.returncode == 0, done.stdout + done.stderr
    (clean_dir, clean_manifest), (planted_dir, planted_manifest) = (load_manifest(f / "runs") for f in (clean, planted))
    assert launches(planted_dir, planted_manifest) == launches(clean_dir, clean_manifest)
    assert {(t["config_file"], t["rename_kernels"]) for t in planted_manifest["targets"]} == {("off", "off")}
    assert all("--config-file off --rename-kernels off" in t["shell_command"] for t in planted_manifest["targets"])


def test_a_campaign_that_names_its_config_file_gets_it(tmp_path: Path, write_campaign) -> None:
    (tmp_path / "team.ncu-cfg").write_text(STRAY)
    campaign = write_campaign("- name: rms\n  kernel_name: rmsnorm_kernel\n", defaults="config_file: team.ncu-cfg")
    done = run(campaign)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    [record] = manifest["targets"]
    assert record["config_file"] == str(tmp_path / "team.ncu-cfg")
    assert f"--config-file on --config-file-path {tmp_path / 'team.ncu-cfg'}" in record["shell_command"]
    # the file's --launch-skip 3 took effect: not the first (prefill) rmsnorm
    [(_, *stack)] = profiled_launch(run_dir, "rms")
    assert not any("prefill" in entry for entry in stack), stack


def test_the_fake_says_which_config_file_it_read_as_ncu_does(tmp_path: Path, write_campaign) -> None:
    # measured on the H200 (docs/ncu-behaviour.md): ncu's first line names the file it read; a run's
    # own commands read none, so its logs never hold that line
    (tmp_path / "config.ncu-cfg").write_text(STRAY)
    bare = subprocess.run(
        ["ncu", "--launch-count", "1", sys.executable, str(FAKE_APP)],
        cwd=tmp_path, env=fake_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bare.stdout.startswith(f'==PROF== Using config file "{tmp_path / "config.ncu-cfg"}"'), bare.stdout[:300]
    campaign = write_campaign("- name: rms\n  kernel_name: rmsnorm_kernel\n")
    assert run(campaign).returncode == 0
    run_dir, _ = load_manifest(tmp_path / "runs")
    assert not any("Using config file" in log.read_text() for log in (run_dir / "logs").rglob("*.log"))
