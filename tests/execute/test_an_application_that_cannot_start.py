"""An application that cannot start (its script is not there) is started once: the run says why once,
closes every other target of the same command line unstarted, naming the run that found it, and its
closing lines give one reason for the targets that share it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import fake_env, load_manifest, run_cli

CAMPAIGN = """application:
  command: python3 nosuch_app.py
defaults:
  sections: SpeedOfLight
  launch_count: 1
  retries: 2
  retry_delay: 0
targets:
  - name: a
    kernel_name: rmsnorm_kernel
  - name: b
    kernel_name: regex:nvjet
  - name: c
    nvtx_include: mlp/
"""


@pytest.mark.slow  # three CLI runs against the fake ncu
@pytest.mark.parametrize("share", [True, False])
def test_the_application_is_started_once_and_the_why_said_once(tmp_path: Path, share: bool) -> None:
    """Before: every target started after the discovery trace had found it cannot start, and the same
    `can't open file` sentence was printed 6 times (3 progress lines, 3 `alone:` lines)."""
    (tmp_path / "camp.yaml").write_text(CAMPAIGN)
    done = run_cli("run", "camp.yaml", *([] if share else ["--no-share"]), cwd=tmp_path, env=fake_env())
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count("can't open file") == 1, done.stdout
    _, manifest = load_manifest(tmp_path / "runs")
    records = [*manifest["targets"], *manifest["shared_runs"]]
    assert sum(len(record["attempts"]) for record in records) == 1  # one start, not retried
    found = "the discovery trace shared/trace-" if share else "target a"
    unstarted = [t for t in manifest["targets"] if not t["attempts"]]
    assert len(unstarted) == (3 if share else 2)
    for target in unstarted:
        assert target["status"] == "app_failed"
        assert target["message"].startswith(f"not started: {found}") and "cannot start" in target["message"]


@pytest.mark.slow
def test_another_command_line_still_starts(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("")
    text = CAMPAIGN.replace("  - name: c\n", "  - name: c\n    command: python3 app.py\n")
    (tmp_path / "camp.yaml").write_text(text)
    run_cli("run", "camp.yaml", "--no-share", cwd=tmp_path, env=fake_env())
    targets = {t["name"]: t for t in load_manifest(tmp_path / "runs")[1]["targets"]}
    assert targets["c"]["attempts"] and not targets["b"]["attempts"]
