"""Every reader over hostile run directories (tests/execute/hostile_run_dirs.py; round 7, must show 2): no exit 70,
no program a run directory names started, no file outside the run opened, no reader hanging. The full round is
`python -m tests.execute.hostile_run_dirs --dirs 2000`; here, a few dozen directories in a process of their own (the
audit hook cannot be taken back)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, fake_env

pytestmark = pytest.mark.slow


def test_hostile_run_directories_start_no_program_open_nothing_outside_and_never_end_70(tmp_path: Path) -> None:
    counts = tmp_path / "counts.json"
    done = subprocess.run(
        [sys.executable, "-m", "tests.execute.hostile_run_dirs", "--dirs", "40", "--readers", "8", "--seed", "11",
         "--json", str(counts)],
        cwd=ROOT, env=fake_env(), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert counts.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads(counts.read_text())
    assert found["readings"] == 320 and len(found["mutations"]) >= 10, found
    assert found["exit_70"] == 0 and found["hangs"] == 0, found["codes"]
    assert found["programs_started"] == [] and not found["marked"], found["programs_started"][:5]
    assert found["opened_outside"] == [], found["opened_outside"][:5]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
