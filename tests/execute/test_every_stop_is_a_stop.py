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


@pytest.mark.parametrize("moment", ["shared/1: reading out its", "shared/2: one application run"])
def test_a_resume_starts_the_application_only_for_the_unions_that_did_not_finish(tmp_path: Path, moment: str) -> None:
    """Stopped once the trace and shared/1 finished: the resume takes no trace (the run's own, pinned), runs no
    finished union again (one whose members were not read out is read out, and the manifest says so), and starts the
    application once for each union it runs and each target it runs alone (FAKE_APP_PID_FILE counts the starts)."""
    (tmp_path / "scale.yaml").write_text(campaign(600))
    starts = tmp_path / "starts"
    args = [sys.executable, "-m", "ncucampaign", "run", "scale.yaml", "--out", "runs"]
    env = fake_env(
        FAKE_NCU_STATE=str(tmp_path / "fake-state"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        FAKE_APP_PID_FILE=str(starts),
    )
    run = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert run.stdout is not None
    for line in run.stdout:
        if moment in line:
            break
    run.send_signal(signal.SIGINT)
    out, _ = run.communicate(timeout=120)
    assert run.returncode == 130, out
    run_dir, before = load_manifest(tmp_path / "runs", "scale")
    finished = {r["name"] for r in before["shared_runs"] if r["kind"] == "union" and r["status"] == "ok"}
    assert "shared/1" in finished, [(r["name"], r["status"]) for r in before["shared_runs"]]
    traces = [r["name"] for r in before["shared_runs"] if r["kind"] == "trace"]
    started_before = len(starts.read_text().split())

    resumed = subprocess.run([*args, "--resume"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert problems(run_dir) == []
    _, after = load_manifest(tmp_path / "runs", "scale")
    assert [r["name"] for r in after["shared_runs"] if r["kind"] == "trace"] == traces  # no trace taken again
    known = {r["name"] for r in before["shared_runs"]}
    new_unions = [r for r in after["shared_runs"] if r["kind"] == "union" and r["name"] not in known]
    done_before = {t["name"] for t in before["targets"] if t["status"] == "ok"}
    alone = [
        t["name"]
        for t in after["targets"]
        if t["name"] not in done_before and (t.get("obtained") or {}).get("how") == "alone"
    ]
    started = len(starts.read_text().split()) - started_before
    assert started == sum(len(r["attempts"]) for r in new_unions) + len(alone), (started, new_unions, alone)
    read_out = [t for t in after["targets"] if "read out on resume" in t["message"]]
    for record in read_out:  # each of a union that had finished, not run again
        assert (record.get("obtained") or {}).get("shared_run") in finished, record["obtained"]
    by_union = {r["name"]: r for r in after["shared_runs"]}
    for name in finished:  # a finished union's members: ok before the stop, or read out of it now
        members = by_union[name]["members"]
        assert all(m in done_before or m in {t["name"] for t in read_out} for m in members), name
