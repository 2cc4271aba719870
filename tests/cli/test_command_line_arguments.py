"""The command line reads what a user types as meant: a campaign file after --only, a run directory that
is not there, GPUs that cannot be checked, one output folder for plan, --dry-run and run, counts in words."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import pytest

from tests.conftest import (
    FAKE_NCU_DIR,
    REPORT,
    campaign_text,
    cli_in,
    fake_env,
    load_manifest,
    run_cli,
    target,
)

TWO = "- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  kernel_name: rmsnorm_kernel\n  launch_skip: 1\n"


@pytest.mark.slow  # runs the CLI end to end
def test_plan_dry_run_and_run_use_the_same_output_folder_wherever_they_run(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "camp.yaml").write_text(campaign_text("- name: t\n  kernel_name: rmsnorm_kernel\n"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    expected_root = project / "runs" / "camp"
    outputs = []
    for cwd, args in ((elsewhere, ("plan", str(project / "camp.yaml"))), (project, ("run", "camp.yaml", "--dry-run"))):
        done = run_cli(*args, cwd=cwd)
        assert done.returncode == 0, done.stderr
        outputs.append(re.search(r"-o '?(\S+?)'? ", done.stdout).group(1))
    assert outputs[0] == str(expected_root / "plan" / "reports" / f"t{REPORT}")
    assert outputs[1] == str(expected_root / "<run-id>" / "reports" / f"t{REPORT}")
    done = run_cli("run", str(project / "camp.yaml"), cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    run_dir, manifest = load_manifest(project / "runs")
    assert target(manifest, "t")["report"]["path"] == f"reports/t{REPORT}" and run_dir.parent == expected_root
    assert not (elsewhere / "runs").exists()


@pytest.mark.slow  # runs the CLI end to end
def test_counts_are_in_words(tmp_path: Path) -> None:
    done = cli_in(tmp_path, "validate", "camp.yaml", text=campaign_text("- name: t\n"))
    assert "ok (1 target, 1 ncu invocation)" in done.stdout
    bad = campaign_text("- name: t\n  launch_count: 0\n")
    assert "1 problem\n" in cli_in(tmp_path, "validate", "camp.yaml", text=bad).stdout  # its verdict
    assert "1 problem; nothing was run." in cli_in(tmp_path, "run", "camp.yaml", text=bad).stderr


@pytest.mark.slow  # runs the CLI end to end
@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_campaign_file_after_only_is_the_file_not_a_target_name(tmp_path: Path, command: str) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text(TWO))
    done = run_cli(command, "--only", "b", "camp.yaml", *(["--out", "runs"] if command == "run" else []), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    if command == "plan":
        assert "[1/1 alone] b" in done.stdout and "] a\n" not in done.stdout
    else:
        assert [t["name"] for t in load_manifest(tmp_path / "runs")[1]["targets"]] == ["b"]
    alone = run_cli(command, "--only", "camp.yaml", cwd=tmp_path)
    assert alone.returncode == 2 and "--only needs at least one target name" in alone.stderr


@pytest.mark.slow  # runs the CLI end to end
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


@pytest.mark.slow  # runs the CLI end to end
def test_a_run_directory_that_is_not_there_says_where_the_runs_are(tmp_path: Path) -> None:
    (tmp_path / "campaigns").mkdir()
    (tmp_path / "campaigns" / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n"))
    assert run_cli("run", "campaigns/camp.yaml", cwd=tmp_path).returncode == 0  # runs land in campaigns/runs/
    done = run_cli("summarize", "runs/camp/latest", cwd=tmp_path)
    assert done.returncode == 2 and f"did you mean {tmp_path / 'campaigns/runs/camp/latest'}?" in done.stderr
    elsewhere = run_cli("summarize", "nothing/here", cwd=tmp_path)
    assert elsewhere.returncode == 2 and "runs go to runs/<campaign>/ beside the campaign file" in elsewhere.stderr


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_discover_names_a_target_that_is_not_there_before_looking_for_ncu(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: k\n"))
    env = fake_env()
    env["PATH"] = env["PATH"].replace(str(FAKE_NCU_DIR), str(tmp_path / "no-ncu"))
    done = run_cli("discover", "camp.yaml", "--target", "nope", cwd=tmp_path, env=env)
    assert done.returncode == 2 and "no target named 'nope'" in done.stderr, done.stderr


DANGLING = re.compile(r"(?:\b(?:the|a|an|of|over|to|for|with|and|or)|'s)$")


def test_no_option_help_stops_mid_sentence() -> None:
    """run --help said of --samples: "samples per target for compare's verdicts, over the campaign's"."""
    from ncucampaign.cli import build_parser

    cut = []
    for name in ("run", "plan", "validate", "compare", "discover", "summarize", "report", "findings"):
        parser = build_parser([name])
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
        cut += [f"{name} {a.option_strings}: {a.help}" for a in sub._actions if a.help and DANGLING.search(a.help)]
    assert cut == []
