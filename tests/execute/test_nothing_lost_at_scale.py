"""Nothing lost at scale: a shared run of hundreds of targets killed with SIGKILL at any moment and resumed ends with
every target ok exactly once and its manifest agreeing with its run directory; Ctrl-C while a large pool is being
planned ends the run at once (bench.py scale --kills does the same at 1,000 targets, ten times)."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.benchmarks.scale import campaign
from tests.conftest import fake_env, load_manifest
from tests.execute.rundir_check import problems

pytestmark = pytest.mark.slow  # runs of hundreds and thousands of targets on the fake ncu


def start(folder: Path, *extra: str) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "ncucampaign", "run", "scale.yaml", "--out", "runs", *extra]
    env = fake_env(FAKE_NCU_STATE=str(folder / "fake-state"), XDG_CACHE_HOME=str(folder / "cache"))
    return subprocess.Popen(args, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.parametrize("seed", range(2))
def test_a_large_shared_run_killed_at_a_random_moment_and_resumed_loses_nothing(tmp_path: Path, seed: int) -> None:
    (tmp_path / "scale.yaml").write_text(campaign(300))
    run = start(tmp_path)
    while not (tmp_path / "runs" / "scale" / "latest").is_dir():  # from now on, a run to resume
        assert run.poll() is None, run.communicate()[0]
        time.sleep(0.01)
    time.sleep(random.Random(seed).uniform(0.0, 1.5))  # the trace, the planning, the unions, the read-outs
    run.kill()
    run.communicate()
    resumed = start(tmp_path, "--resume")
    out, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out
    run_dir, _ = load_manifest(tmp_path / "runs", "scale")
    assert problems(run_dir) == []


def test_ctrl_c_while_a_large_pool_is_planned_ends_the_run_at_once(tmp_path: Path) -> None:
    (tmp_path / "scale.yaml").write_text(campaign(4000))
    run = start(tmp_path)
    assert run.stdout is not None
    for line in run.stdout:  # the run says it plans (on a pipe, a line as the phase starts)
        if "planning the shared runs of" in line:
            break
    asked = time.monotonic()
    run.send_signal(signal.SIGINT)
    rest, _ = run.communicate(timeout=120)
    took = time.monotonic() - asked
    assert run.returncode == 130, rest
    _, manifest = load_manifest(tmp_path / "runs", "scale")
    assert manifest["state"] == "interrupted"
    stopped = [t for t in manifest["targets"] if "stopped while its groups were planned" in t["message"]]
    assert len(stopped) > 3000  # the stop came in planning, and was taken there
    assert not [run for run in manifest["shared_runs"] if run["kind"] == "union"]  # no union started after it
    assert took < 10, took  # planning 4,000 members takes over a second, the whole run over fifteen
