"""A shared campaign's trace pool on the real test Slurm (tests/backends/slurm_cluster.py, 4 fake GPUs, the fake ncu):
its first task takes the trace and plans the unions, a second array (held back with --dependency=afterany until that
task ends) runs them side by side, one union a task; `--wait` ends with a local run's closing lines; a stopped run
resumes without tracing again and runs only the unions that did not finish."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.backends import slurm_cluster as cluster
from tests.backends.test_slurm import squeue_empty, wait_until
from tests.conftest import campaign_text, fake_env, run_cli
from tests.execute.rundir_check import problems

WHY_NOT = cluster.why_not()
pytestmark = [pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or ""), pytest.mark.slurm, pytest.mark.slow]

# Eight targets of two filters, 100 launches each: four unions of two on the fake (a local run makes the same).
POOL = """
- name: rms_{launch_skip}
  kernel_name: rmsnorm_kernel
  args: [--steps, '210']
  matrix: {launch_skip: [0, 100, 200, 300]}
- name: gemm_{launch_skip}
  kernel_name: regex:nvjet
  args: [--steps, '210']
  matrix: {launch_skip: [0, 100, 200, 300]}
"""


@pytest.fixture(scope="module", autouse=True)
def slurm() -> Iterator[None]:
    with cluster.cluster():
        yield


def _campaign(tmp_path: Path) -> None:
    text = campaign_text(POOL).replace("  launch_count: 1\n", "  launch_count: 100\n", 1)
    (tmp_path / "camp.yaml").write_text(text)


def _manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "manifest.json").read_text())


def identities(manifest: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """Per target, each result's launch: its ordinal, kernel, grid and block (bench.py's identity)."""
    return {
        t["name"]: [(r["index"], r["kernel"], tuple(r["grid"] or ()), tuple(r["block"] or ())) for r in t["results"]]
        for t in manifest["targets"]
    }


def test_a_pools_unions_run_one_a_task_after_its_trace_and_profile_what_a_local_run_does(tmp_path: Path) -> None:
    _campaign(tmp_path)
    local = run_cli("run", "camp.yaml", "--out", "local", cwd=tmp_path, env=fake_env())
    assert local.returncode == 0, local.stdout + local.stderr
    slow = fake_env(FAKE_NCU_SECONDS_PER_KERNEL="0.02", FAKE_NCU_ONE_PASS_SECONDS_PER_KERNEL="0")  # unions of 4 s
    done = run_cli("run", "camp.yaml", "--slurm", "--wait", "--out", "runs", cwd=tmp_path, env=slow)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()
    assert problems(run_dir) == []  # every target ok exactly once, the manifest agreeing with the run directory
    data = _manifest(run_dir)
    first, second = data["submissions"]
    assert first["tasks"] == [[t["name"] for t in data["targets"]]] and not first["after"]
    assert second["tasks"] and all(task == [] for task in second["tasks"])
    assert second["after"] == [f"{first['job_id']}_0"]
    assert f"--dependency=afterany:{first['job_id']}_0" in (run_dir / second["script"]).read_text()
    roles = json.loads((run_dir / "slurm" / "array-2.json").read_text())["roles"]
    assert all(not role["waits"] for role in roles)  # held back until the first task ended: none waits for a plan
    unions = [r for r in data["shared_runs"] if r["kind"] == "union"]
    assert len(unions) == 4 and all(r["name"].startswith("shared/p1.0-") for r in unions)
    assert [r for r in data["shared_runs"] if r["kind"] == "trace"], "the trace, recorded by the first task"
    tasks = {t["placement"]["array_task_id"] for t in data["targets"]}
    assert {t["placement"]["array_job_id"] for t in data["targets"]} == {second["job_id"]}
    assert len(tasks) >= 2, f"the unions ran in one task ({tasks}): nothing ran side by side"
    assert identities(data) == identities(_manifest((tmp_path / "local" / "camp" / "latest").resolve()))
    out = done.stdout
    assert "8 targets: 8 ok" in out and "sharing: trace by ncu" in out, out
    assert "own time: submitter" in out and "records" in out and "floor: this run took" in out, out


def test_a_stopped_pool_resumes_without_tracing_again_and_reruns_only_what_did_not_finish(tmp_path: Path) -> None:
    """Two tasks at a time (2 of the node's 4 CPUs each): the run is cancelled once two unions have finished; the
    resume starts the application once for each union it runs and never for the trace."""
    _campaign(tmp_path)
    starts = tmp_path / "starts"
    env = fake_env(  # unions of 8 s, the trace quick; each start of the application appends its pid
        FAKE_NCU_SECONDS_PER_KERNEL="0.04", FAKE_NCU_ONE_PASS_SECONDS_PER_KERNEL="0", FAKE_APP_PID_FILE=str(starts)
    )
    args = ["--slurm-arg=--cpus-per-task=2"]
    done = run_cli("run", "camp.yaml", "--slurm", "--out", "runs", *args, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()

    def finished_unions() -> int:
        """Unions of two whose targets are ok, by the targets summarize lists ok. Its rows are a metric of a result
        each: counted as targets, one union read out (800 rows) passed for two, and a cancel then left 6 not ok."""
        collected = run_cli("summarize", str(run_dir), "--format", "json", cwd=tmp_path, env=fake_env())
        rows = json.loads(collected.stdout) if collected.returncode in (0, 1) and collected.stdout else []
        ok = {
            row["target"] for row in (rows if isinstance(rows, list) else rows.get("rows", [])) if row["status"] == "ok"
        }
        return len(ok) // 2

    wait_until(lambda: finished_unions() >= 2, "two unions to finish", seconds=240)
    jobs = [str(s["job_id"]) for s in _manifest(run_dir)["submissions"]]
    subprocess.run(["scancel", "-t", "PENDING", *jobs], timeout=30)
    subprocess.run(["scancel", "-b", "-s", "INT", *jobs], timeout=30)
    wait_until(squeue_empty, "the arrays to end", seconds=240)
    run_cli("collect", str(run_dir), cwd=tmp_path)
    left = [t["name"] for t in _manifest(run_dir)["targets"] if t["status"] != "ok"]
    assert 0 < len(left) <= 4, left
    before = len(starts.read_text().split()) if starts.exists() else 0

    again = run_cli("run", "--resume", str(run_dir), "--slurm", "--wait", *args, cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert problems(run_dir) == []
    data = _manifest(run_dir)
    resumed = data["submissions"][2:]
    assert resumed[0]["tasks"] == [left]  # its first task claims only what was not ok
    pools = {path.stem: json.loads(path.read_text()) for path in (run_dir / "slurm" / "pools").glob("p*.json")}
    plan = pools[f"p{resumed[0]['number']}.0"]
    assert plan["trace"]["reused"] or plan["trace"]["key"] == pools["p1.0"]["trace"]["key"]
    traces = [r for r in data["shared_runs"] if r["kind"] == "trace"]
    assert len(traces) == 1, [r["name"] for r in traces]  # the first run's: the resume took none
    rerun = [r for r in data["shared_runs"] if r["kind"] == "union" and r["name"].startswith(f"shared/{plan['pool']}-")]
    started = len(starts.read_text().split()) - before
    assert rerun and started == sum(len(r["attempts"]) for r in rerun) + sum(
        1 for t in data["targets"] if t["name"] in left and (t.get("obtained") or {}).get("how") == "alone"
    ), (started, [r["name"] for r in rerun])
