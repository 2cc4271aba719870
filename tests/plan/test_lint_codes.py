"""Lint codes: lint_ignore adds to defaults, unknown codes are errors, NCU009 suggests the section meant, and
what the installed ncu refuses fails validate without --strict."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import (
    campaign_text,
    cli_in,
    fake_env,
    run_cli,
)


@pytest.mark.slow  # runs the CLI end to end
def test_lint_ignore_adds_to_defaults_and_unknown_codes_are_errors(tmp_path: Path) -> None:
    targets = "- name: t\n  nvtx_include: step\n  python_include: f.py@g\n  lint_ignore: [NCU008]\n"
    done = cli_in(tmp_path, "validate", "camp.yaml", text=campaign_text(targets, defaults="lint_ignore: [NCU001]"))
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr  # NCU001 from defaults still silenced
    done = cli_in(tmp_path, "validate", "camp.yaml", text=campaign_text("- name: t\n  lint_ignore: [NCU01]\n"))
    assert done.returncode == 2 and "no warning has the code 'NCU01'; did you mean" in done.stderr


@pytest.mark.slow  # runs the CLI end to end
def test_ncu009_suggests_the_section_meant_and_ncu004_speaks_of_sections(tmp_path: Path) -> None:
    text = campaign_text(
        "- name: t\n  sections: [SpeedOfLite]\n  launch_count: 1\n"
        "- name: u\n  sections: [SpeedOfLight, LaunchStats, Occupancy, SchedulerStats]\n",
        defaults="",
    ).replace("  launch_count: 1\n  timeout", "  timeout", 1)
    done = cli_in(tmp_path, "validate", "camp.yaml", text=text)  # the fake ncu lists the real sections
    assert "NCU009" in done.stderr and "did you mean 'SpeedOfLight'?" in done.stderr, done.stderr
    ncu004 = next(line for line in done.stderr.splitlines() if "NCU004" in line)
    assert "4 sections" in ncu004 and "--set full" not in ncu004


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_what_the_installed_ncu_refuses_fails_validate_without_strict(tmp_path: Path) -> None:
    """validate exited 0 on "ncu will refuse it"; plan and run say it as an error too (run runs the
    other targets: one broken target never stops a campaign)."""
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n  set: ful\n"))
    done = run_cli("validate", "camp.yaml", cwd=tmp_path, env=fake_env())
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "error NCU009 targets[0].set: set 'ful' is not listed" in done.stderr and "did you mean 'full'?" in done.stderr
    )
    assert "not ok (1 target, 1 ncu invocation, 1 error (the installed ncu refuses them))" in done.stdout
    planned = run_cli("plan", "camp.yaml", cwd=tmp_path, env=fake_env())
    assert planned.returncode == 0 and "error NCU009 targets[0].set" in planned.stderr
