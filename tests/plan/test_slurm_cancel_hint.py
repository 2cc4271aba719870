"""plan --slurm says how to cancel pending tasks too."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import campaign_text, fake_env, run_cli


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_plan_slurm_says_how_to_cancel_pending_tasks_too(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: k\n"))
    done = run_cli("plan", "camp.yaml", "--slurm", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0 and "scancel -t PENDING <job id>; scancel -b -s INT <job id>" in done.stdout
