"""run --k8s against kmock's API server and a fake kubelet (tests/backends/k8s_harness.py), the pods running
the fake ncu here: every target ok exactly once; a killed pod's unit interrupted and run
again by --resume, or taken over by the Job's retry with nothing recorded lost; FailIndex; a refused
submission that leaves no run behind."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ncucampaign.errors import UsageError
from ncucampaign.execute.rundir.reading import read_journaled
from tests.conftest import FAKE_NCU_DIR, fake_env, load_manifest, run_cli
from tests.execute.rundir_check import problems

pytest.importorskip("kmock")
pytest.importorskip("kubernetes")

from tests.backends.k8s_harness import ApiServer, FakeKubelet

pytestmark = pytest.mark.k8s


def k8s_campaign(write_campaign, tmp_path: Path, targets: str, retries: int = 0, defaults: str = "") -> Path:
    campaign = write_campaign(targets, defaults=defaults)
    campaign.write_text(campaign.read_text().replace("  retries: 0\n", f"  retries: {retries}\n", 1))
    section = {
        "image": "registry.example.com/ncucampaign:test",
        "volume": {"claim": "runs", "path": str(tmp_path)},
        "python": sys.executable,  # the pods run here: this Python has ncucampaign
        "parallelism": 3,
    }
    campaign.write_text(campaign.read_text() + "kubernetes: " + json.dumps(section) + "\n")
    return campaign


def test_two_targets_that_share_run_in_one_pod_with_the_defaults(tmp_path: Path, write_campaign) -> None:
    """Sharing is on by default: the pod's shared run writes its report and log under a name made from
    its task ("default/<job>_<index>"), whose "/" once made a folder that did not exist."""
    targets = "- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  kernel_name: rmsnorm_kernel\n  launch_skip: 1"
    campaign = k8s_campaign(write_campaign, tmp_path, targets)
    with ApiServer(tmp_path) as server, FakeKubelet(server, env_for(server)) as kubelet:
        done = run_cli("run", str(campaign), "--k8s", "--wait", cwd=tmp_path, env=env_for(server))
    assert done.returncode == 0, done.stdout + done.stderr + str(kubelet.logs)
    _, manifest = load_manifest(tmp_path / "runs")
    assert [t["status"] for t in manifest["targets"]] == ["ok", "ok"]
    assert {t["obtained"]["how"] for t in manifest["targets"]} == {"shared"}  # one application start
    (shared,) = [r for r in manifest["shared_runs"] if r.get("kind") == "union"]
    assert shared["status"] == "ok" and sorted(shared["members"]) == ["a", "b"]


def env_for(server: ApiServer, **extra: str) -> dict[str, str]:
    return fake_env(KUBECONFIG=str(server.kubeconfig()), **extra)


def running_record(run_root: Path, index: int) -> bool:
    """The pod of this index recorded an attempt under way (ncu started): the moment to kill it."""
    for record in run_root.glob(f"camp/*/slurm/tasks/*_{index}.json"):
        try:  # with its journal: the task appends its changes there
            data = read_journaled(record).model_dump(mode="json")
        except UsageError:
            continue
        if any(a.get("process_group") and not a.get("ended_at") for t in data["targets"] for a in t["attempts"]):
            return True
    return False


def test_ten_targets_each_ok_exactly_once(tmp_path: Path, write_campaign) -> None:
    # ten workloads (each its own --steps), so that no two share a start: one index each
    targets = "\n".join(
        f"- name: t{i}\n  kernel_name: rmsnorm_kernel\n  args: [--steps, '{12 + i}']" for i in range(10)
    )
    campaign = k8s_campaign(write_campaign, tmp_path, targets)
    runs = tmp_path / "runs"
    with ApiServer(tmp_path) as server, FakeKubelet(server, env_for(server)) as kubelet:
        done = run_cli("run", str(campaign), "--k8s", "--wait", cwd=tmp_path, env=env_for(server))
    assert done.returncode == 0, done.stdout + done.stderr + str(kubelet.pods)
    assert "created Kubernetes Job default/ncucampaign-camp-" in done.stdout
    run_dir, manifest = load_manifest(runs)
    assert manifest["state"] == "finished"
    assert [t["status"] for t in manifest["targets"]] == ["ok"] * 10
    assert all(len(t["attempts"]) == 1 for t in manifest["targets"])
    indexes = sorted(t["placement"]["array_task_id"] for t in manifest["targets"])
    assert indexes == list(range(10)) and {t["placement"]["backend"] for t in manifest["targets"]} == {"kubernetes"}
    assert sorted(index for _, index, _, _ in kubelet.pods) == list(range(10))  # one pod per index
    (array,) = manifest["submissions"]
    assert array["backend"] == "kubernetes" and array["job_id"].startswith("default/ncucampaign-camp-")
    job = (run_dir / array["script"]).read_text()
    assert "completionMode: Indexed" in job and "completions: 10" in job
    summary = run_cli("summarize", str(run_dir), cwd=tmp_path, env=env_for(server))
    assert summary.returncode == 0, summary.stderr


def test_a_killed_pod_is_interrupted_and_resume_runs_it_again(tmp_path: Path, write_campaign) -> None:
    # two workloads (b has a third layer): two indexes, one of which is killed
    targets = (
        "- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  kernel_name: rmsnorm_kernel\n  args: [--layers, '3']"
    )
    campaign = k8s_campaign(write_campaign, tmp_path, targets, retries=0)
    runs = tmp_path / "runs"
    with ApiServer(tmp_path) as server:
        with FakeKubelet(server, env_for(server, FAKE_NCU_SECONDS_PER_KERNEL="5")) as kubelet:
            kubelet.kill[(1, 0)] = lambda: running_record(runs, 1)
            done = run_cli("run", str(campaign), "--k8s", "--wait", cwd=tmp_path, env=env_for(server))
            assert done.returncode == 1, done.stdout + done.stderr
        run_dir, manifest = load_manifest(runs)
        b = next(t for t in manifest["targets"] if t["name"] == "b")
        assert b["status"] == "interrupted", b
        assert b["message"].startswith("its pod (Job default/ncucampaign-camp-") and "--k8s reruns it" in b["message"]
        assert b["attempts"][-1]["status"] == "interrupted"
        assert (1, 0, -9) in [p[1:] for p in kubelet.pods]
        with FakeKubelet(server, env_for(server)) as again:
            resumed = run_cli("run", "--resume", str(run_dir), "--k8s", "--wait", cwd=tmp_path, env=env_for(server))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    _, manifest = load_manifest(runs)
    assert [t["status"] for t in manifest["targets"]] == ["ok", "ok"]
    assert len(manifest["submissions"]) == 2 and manifest["submissions"][1]["tasks"] == [["b"]]
    b = next(t for t in manifest["targets"] if t["name"] == "b")
    assert [a["status"] for a in b["attempts"]] == ["interrupted", "ok"]  # nothing recorded was lost
    assert [p[1:3] for p in again.pods] == [(0, 0)]  # the new Job ran only b


def test_the_jobs_retry_takes_over_the_killed_pods_claim(tmp_path: Path, write_campaign) -> None:
    campaign = k8s_campaign(write_campaign, tmp_path, "- name: a\n  kernel_name: rmsnorm_kernel", retries=1)
    runs = tmp_path / "runs"
    with (
        ApiServer(tmp_path) as server,
        FakeKubelet(server, env_for(server, FAKE_NCU_SECONDS_PER_KERNEL="1")) as kubelet,
    ):
        kubelet.kill[(0, 0)] = lambda: running_record(runs, 0)
        done = run_cli("run", str(campaign), "--k8s", "--wait", cwd=tmp_path, env=env_for(server))
    assert done.returncode == 0, done.stdout + done.stderr
    assert [p[1:] for p in kubelet.pods] == [(0, 0, -9), (0, 1, 0)]
    _, manifest = load_manifest(runs)
    (a,) = manifest["targets"]
    assert a["status"] == "ok" and [x["status"] for x in a["attempts"]] == ["interrupted", "ok"], a["attempts"]
    assert a["placement"]["job_id"].endswith("-0-1")  # the retry's pod


def test_no_kernels_fails_its_index_without_a_retry(tmp_path: Path, write_campaign) -> None:
    targets = "- name: good\n  kernel_name: rmsnorm_kernel\n- name: typo\n  kernel_name: rmsnorm_kernal"
    campaign = k8s_campaign(write_campaign, tmp_path, targets, retries=2)
    with ApiServer(tmp_path) as server, FakeKubelet(server, env_for(server)) as kubelet:
        done = run_cli("run", str(campaign), "--k8s", "--wait", cwd=tmp_path, env=env_for(server))
    assert done.returncode == 1, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    assert [t["status"] for t in manifest["targets"]] == ["ok", "no_kernels"]
    assert sorted(p[1:] for p in kubelet.pods) == [(0, 0, 0), (1, 0, 1)]  # exit 1: FailIndex, no second pod
    (status,) = kubelet.statuses.values()
    assert status["failedIndexes"] == "1" and status["completedIndexes"] == "0"


def test_a_refused_submission_leaves_no_run_behind(tmp_path: Path, write_campaign) -> None:
    campaign = k8s_campaign(write_campaign, tmp_path, "- name: a\n  kernel_name: rmsnorm_kernel")
    runs = tmp_path / "runs"
    assert run_cli("run", str(campaign), cwd=tmp_path, env=fake_env()).returncode == 0  # a local run first
    before = (runs / "camp" / "latest").resolve()
    forbidden = 'jobs.batch is forbidden: User "ci" cannot create resource "jobs" in the namespace "default"'
    with ApiServer(tmp_path, refuse=forbidden) as server:
        done = run_cli("run", str(campaign), "--k8s", cwd=tmp_path, env=env_for(server))
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"the Kubernetes API refused the Job: 403: {forbidden}" in done.stderr
    assert "no run directory was kept" in done.stderr
    assert "Traceback" not in done.stderr
    assert (runs / "camp" / "latest").resolve() == before
    assert sorted(p.name for p in (runs / "camp").iterdir() if not p.is_symlink()) == [before.name]


def test_no_cluster_configured_is_a_clear_error(tmp_path: Path, write_campaign) -> None:
    campaign = k8s_campaign(write_campaign, tmp_path, "- name: a\n  kernel_name: rmsnorm_kernel")
    done = run_cli(
        "run", str(campaign), "--k8s", cwd=tmp_path, env=fake_env(KUBECONFIG=str(tmp_path / "missing"))
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert "no Kubernetes cluster configured" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()  # asked before a run directory is made


def test_a_machine_without_ncu_submits_and_the_pods_find_theirs(tmp_path: Path, write_campaign) -> None:
    campaign = k8s_campaign(write_campaign, tmp_path, "- name: a\n  kernel_name: rmsnorm_kernel")
    campaign.write_text(campaign.read_text().replace("application:", "ncu: ncu\napplication:", 1))
    with ApiServer(tmp_path) as server, FakeKubelet(server, env_for(server)) as kubelet:
        here = env_for(server)
        here["PATH"] = here["PATH"].replace(str(FAKE_NCU_DIR), str(tmp_path / "no-ncu-here"))
        done = run_cli("run", str(campaign), "--k8s", "--wait", cwd=tmp_path, env=here)
    assert done.returncode == 0, done.stdout + done.stderr + str(kubelet.logs)
    assert "'ncu' is not on this machine; the pods run the image's" in done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    (a,) = manifest["targets"]
    assert a["status"] == "ok" and a["argv"][0] == str(FAKE_NCU_DIR / "ncu")  # as the pod found it


def test_a_pools_unions_are_indexes_of_its_job_after_the_trace_and_each_target_is_ok_once(
    tmp_path: Path, write_campaign
) -> None:
    """A trace pool (eight targets of two filters, four unions): one Indexed Job, index 0 its first stage (trace and
    plan, then unions), the others its second, each pod waiting for the plan and taking one union at a time."""
    targets = (
        "- name: rms_{launch_skip}\n  kernel_name: rmsnorm_kernel\n  args: [--steps, '210']\n"
        "  matrix: {launch_skip: [0, 100, 200, 300]}\n"
        "- name: gemm_{launch_skip}\n  kernel_name: regex:nvjet\n  args: [--steps, '210']\n"
        "  matrix: {launch_skip: [0, 100, 200, 300]}"
    )
    campaign = k8s_campaign(write_campaign, tmp_path, targets)
    campaign.write_text(campaign.read_text().replace("  launch_count: 1\n", "  launch_count: 100\n", 1))
    slow = {"FAKE_NCU_SECONDS_PER_KERNEL": "0.02", "FAKE_NCU_ONE_PASS_SECONDS_PER_KERNEL": "0"}  # unions of 4 s
    with ApiServer(tmp_path) as server, FakeKubelet(server, env_for(server, **slow)) as kubelet:
        done = run_cli("run", str(campaign), "--k8s", "--wait", cwd=tmp_path, env=env_for(server))
    assert done.returncode == 0, done.stdout + done.stderr + str(kubelet.logs)
    run_dir, manifest = load_manifest(tmp_path / "runs")
    assert problems(run_dir) == []  # each target ok exactly once, the manifest agreeing with the run directory
    (job,) = manifest["submissions"]
    assert job["tasks"][0] == [t["name"] for t in manifest["targets"]] and all(not t for t in job["tasks"][1:])
    unions = [r for r in manifest["shared_runs"] if r["kind"] == "union"]
    assert len(unions) == 4 and all(r["name"].startswith("shared/p1.0-") for r in unions)
    first, *second = json.loads((run_dir / "slurm" / "array-1.json").read_text())["roles"]
    assert first["then_unions"] and all(role["waits"] for role in second)  # one Job: nothing holds the stage back
    indexes = {t["placement"]["array_task_id"] for t in manifest["targets"]}
    assert len(indexes) >= 2, indexes  # the unions ran in several pods at once (index 0 takes some once it planned)
    assert "launches profiled by" in done.stdout, done.stdout  # --wait counts the running unions' launches too
    assert "8 targets: 8 ok" in done.stdout and "sharing: trace by ncu" in done.stdout, done.stdout


def test_wait_ends_with_a_local_runs_closing_lines_folded_past_fifty_targets(tmp_path: Path, write_campaign) -> None:
    """Sixty targets in one pool: the table folded to what is not ok (none), the tally, what sharing did, own time
    (the submitter's and the tasks') and the limit, as a local run ends."""
    targets = (
        "- name: rms_{launch_skip}\n  kernel_name: rmsnorm_kernel\n  args: [--steps, '20']\n"
        f"  matrix: {{launch_skip: {list(range(30))}}}\n"
        "- name: gemm_{launch_skip}\n  kernel_name: regex:nvjet\n  args: [--steps, '20']\n"
        f"  matrix: {{launch_skip: {list(range(30))}}}"
    )
    campaign = k8s_campaign(write_campaign, tmp_path, targets)
    with ApiServer(tmp_path) as server, FakeKubelet(server, env_for(server)) as kubelet:
        done = run_cli("run", str(campaign), "--k8s", "--wait", cwd=tmp_path, env=env_for(server))
    assert done.returncode == 0, done.stdout + done.stderr + str(kubelet.logs)
    lines = done.stdout.splitlines()
    assert "60 targets: 60 ok" in lines, done.stdout
    assert any(line.startswith("sharing: trace by ncu") and "shared/p1.0-0-1: ok" in line for line in lines)
    assert any(line.startswith("own time: submitter ") and " over " in line and " records" in line for line in lines)
    assert any(line.startswith("floor: this run took") for line in lines), done.stdout
    assert not any(line.strip().startswith("rms_") for line in lines), "over 50 targets the table shows none ok"
