"""Every stop is a stop (issue 80): SIGINT, SIGTERM or SIGHUP at any moment of a shared run of hundreds of targets
ends it with exit 130, its closing lines (the tally) and the resume command, and the resume then ends with every
target ok exactly once. Each stop comes at a moment the run shows (its progress lines through a pipe): the trace,
the planning, a union, a read-out while the next union starts. Before, a stop between two unions announced the next
and then read its never-written log: exit 3, 'cannot write .../logs/shared/3.log'. bench.py stops does the same at
1,000 targets, at 50 moments spread over the run's life."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.benchmarks.scale import campaign
from tests.conftest import fake_env, load_manifest
from tests.execute.rundir_check import problems

pytestmark = pytest.mark.slow  # runs of hundreds of targets on the fake ncu, each stopped and resumed

MOMENTS = [
    ("the discovery trace of", signal.SIGINT),
    ("planning the shared runs of", signal.SIGTERM),
    ("shared/1: one application run", signal.SIGHUP),
    ("shared/1: reading out its", signal.SIGTERM),  # the next union is being started meanwhile
    ("shared/2: reading out its", signal.SIGINT),
]


def start(folder: Path, *extra: str) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "ncucampaign", "run", "scale.yaml", "--out", "runs", *extra]
    env = fake_env(FAKE_NCU_STATE=str(folder / "fake-state"), XDG_CACHE_HOME=str(folder / "cache"))
    return subprocess.Popen(args, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.parametrize(("moment", "sig"), MOMENTS, ids=[f"{m.split(':')[0]}-{s.name}" for m, s in MOMENTS])
def test_a_stop_at_any_moment_ends_130_with_the_tally_and_the_resume_finishes(
    tmp_path: Path, moment: str, sig: signal.Signals
) -> None:
    (tmp_path / "scale.yaml").write_text(campaign(600))
    run = start(tmp_path)
    assert run.stdout is not None
    seen = []
    for line in run.stdout:  # through a pipe: a line as each phase starts
        seen.append(line)
        if moment in line:
            break
    else:
        pytest.fail(f"the run ended before {moment!r}: {''.join(seen[-5:])}")
    asked = time.monotonic()
    run.send_signal(sig)
    rest, _ = run.communicate(timeout=120)
    took = time.monotonic() - asked
    assert run.returncode == 130, rest
    assert "error" not in rest, rest  # no write failure said of a file never written
    assert " targets: " in rest and "--resume" in rest, rest  # the tally; how to finish it
    print(f"{sig.name} at {moment!r}: exit 130 in {took:.2f} s")
    resumed = start(tmp_path, "--resume")
    out, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out
    run_dir, _ = load_manifest(tmp_path / "runs", "scale")
    assert problems(run_dir) == []
