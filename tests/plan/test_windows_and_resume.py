"""The pure heart of shared-run correctness (plan/share/windows.py: the union's window from the
trace, each member's window in it, and the verification of a union run against the trace) and of
resuming (execute/resume.py: which targets run again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncucampaign.execute.resume import Decision, resume_decision, resumed_manifest
from ncucampaign.execute.rundir.book import fingerprint, pending_record
from ncucampaign.execute.rundir.manifest import (
    CampaignInfo,
    HostInfo,
    Manifest,
    NcuInfo,
    TargetRecord,
    ToolInfo,
)
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunDir
from ncucampaign.plan.share.launches import Launch
from ncucampaign.plan.share.windows import (
    MemberWindow,
    member_wanted,
    member_window,
    uncovered,
    union_window,
    verify_against_trace,
)
from tests.conftest import invocation


def launch(id: int, kernel: str, nvtx: tuple[str, ...] = ("<default>:decode_step",)) -> Launch:
    return Launch(id=id, symbol=kernel, grid=(8, 1, 1), block=(256, 1, 1), nvtx=nvtx)


# A trace of the union filter: rmsnorm and gemm launches interleaved, as IDs 0..9.
TRACE = [launch(i, "rmsnorm" if i % 2 == 0 else "gemm") for i in range(10)]
RMSNORM = [x for x in TRACE if x.symbol == "rmsnorm"]  # what the rmsnorm member's filter selects
GEMM = [x for x in TRACE if x.symbol == "gemm"]


def test_a_member_wants_its_skip_and_count_among_what_it_selects() -> None:
    assert member_wanted(RMSNORM, 2, 2) == (TRACE[4], TRACE[6])
    assert str(member_wanted(RMSNORM, 4, 2)).endswith(
        "select 5 launch(es) in the discovery trace; it needs launches 5-6"
    )
    assert str(member_wanted(RMSNORM, 5, 1)).endswith("it needs launch 6")  # one launch is named as one


def test_the_union_window_spans_from_the_first_to_the_last_wanted_launch() -> None:
    wanted = [member_wanted(RMSNORM, 1, 1), member_wanted(GEMM, 2, 1)]  # IDs 2 and 5
    union = union_window(TRACE, wanted)  # type: ignore[arg-type]
    assert union.skip == 2 and [x.id for x in union.launches] == [2, 3, 4, 5]


def test_a_members_split_skips_its_own_matches_inside_the_window_before_its_first_wanted() -> None:
    gemm_wanted = member_wanted(GEMM, 2, 1)  # ID 5
    rms_wanted = member_wanted(RMSNORM, 1, 1)  # ID 2
    union = union_window(TRACE, [gemm_wanted, rms_wanted])  # type: ignore[list-item]
    # gemm IDs 1 and 3 come before 5; only 3 lies inside the window [2, 5]
    assert member_window(GEMM, 2, gemm_wanted, union).skip_in_union == 1  # type: ignore[arg-type]
    assert member_window(RMSNORM, 1, rms_wanted, union).skip_in_union == 0  # type: ignore[arg-type]


def test_a_wanted_launch_outside_the_union_is_found() -> None:
    union = union_window(TRACE, [(TRACE[2],), (TRACE[4],)])
    assert uncovered((TRACE[4],), union) is None
    assert uncovered((TRACE[7],), union) == TRACE[7]


def test_a_union_run_that_profiled_what_the_trace_says_verifies() -> None:
    union = union_window(TRACE, [(TRACE[2],), (TRACE[5],)])
    member = MemberWindow((TRACE[5],), 1)
    assert verify_against_trace(TRACE[2:6], union, member, {}) is None
    assert verify_against_trace(TRACE[2:9], union, member, {}) is None  # launches after the member's last do not matter


def test_a_union_run_that_profiled_too_few_launches_does_not_verify() -> None:
    union = union_window(TRACE, [(TRACE[2],), (TRACE[5],)])
    problem = verify_against_trace(TRACE[2:5], union, MemberWindow((TRACE[5],), 1), {})
    assert problem is not None and "profiled 3 launches" in problem.reason


@pytest.mark.parametrize(
    "changed",
    [
        launch(3, "softmax"),  # another kernel
        launch(3, "gemm", nvtx=("<default>:prefill",)),  # another NVTX stack
        Launch(id=3, symbol="gemm", grid=(4, 1, 1), block=(256, 1, 1), nvtx=TRACE[3].nvtx),  # another grid
    ],
)
def test_a_union_run_whose_launch_differs_from_the_trace_does_not_verify(changed: Launch) -> None:
    union = union_window(TRACE, [(TRACE[2],), (TRACE[5],)])
    profiled = [TRACE[2], changed, TRACE[4], TRACE[5]]
    problem = verify_against_trace(profiled, union, MemberWindow((TRACE[5],), 1), {})
    assert problem is not None and "launch 2" in problem.reason
    # a member whose last launch comes before the difference is still exact
    assert verify_against_trace(profiled, union, MemberWindow((TRACE[2],), 0), {}) is None


# --- resume decisions ------------------------------------------------------------------------------------

INV = invocation(kernel_name="k", launch_count=1)
RUN = RunDir(Path("/runs/camp/1"), "1")


def record(status: Status, argv: list[str] | None = None) -> TargetRecord:
    made = pending_record(INV, argv or ["ncu", "app"], RUN)
    made.status = status
    return made


@pytest.mark.parametrize(
    ("status", "same_command", "rerun_failed", "decision"),
    [
        (Status.OK, True, False, Decision.SKIP),  # done and unchanged
        (Status.OK, False, False, Decision.RUN),  # its command changed
        (Status.OK, False, True, Decision.SKIP),  # --rerun-failed never reruns an ok target
        (Status.NO_KERNELS, True, False, Decision.RUN),
        (Status.INTERRUPTED, True, True, Decision.RUN),
        (Status.PENDING, True, False, Decision.RUN),  # never started
        (Status.PENDING, True, True, Decision.SKIP),  # --rerun-failed: failures only
    ],
)
def test_resume_decisions(status: Status, same_command: bool, rerun_failed: bool, decision: Decision) -> None:
    before = record(status)
    new = fingerprint(["ncu", "app"] if same_command else ["ncu", "--set", "full", "app"], INV)
    assert resume_decision(before, new, rerun_failed) == decision


def test_a_target_new_to_the_campaign_runs_unless_only_failures_rerun() -> None:
    assert resume_decision(None, "x", rerun_failed=False) == Decision.RUN
    assert resume_decision(None, "x", rerun_failed=True) == Decision.SKIP


def test_a_resumed_manifest_keeps_history_and_targets_no_longer_planned() -> None:
    failed = record(Status.NO_KERNELS)
    failed.attempts = []
    gone = record(Status.OK).model_copy(update={"name": "gone"})
    old = Manifest(
        tool=ToolInfo(version="0"),
        run_id="1",
        state="finished",
        started_at="then",
        command_line=[],
        campaign=CampaignInfo(name="camp", source=None, copy_path="campaign.yaml", sha256=""),
        host=HostInfo(hostname="h", platform="p", python="3"),
        ncu=NcuInfo(path="ncu", version=None),
        gpus=None,
        workload_git=None,
        targets=[failed, gone],
    )
    info = old.campaign
    manifest, to_run = resumed_manifest(old, [INV], {"t": record(Status.PENDING)}, info, False, "now")
    assert [inv.name for inv in to_run] == ["t"]
    assert [t.name for t in manifest.targets] == ["t", "gone"] and manifest.resumed == ["now"]
    assert manifest.state == "running" and manifest.targets[0].status == Status.PENDING


# --- a resumed run keeps its own flags --------------------------------------------------------


@pytest.mark.slow
def test_a_resumed_run_keeps_no_share_samples_and_weigh(tmp_path: Path, write_campaign) -> None:
    from tests.conftest import fake_env, run_cli

    targets = "- name: t\n  kernel_name: rmsnorm_kernel\n  matrix:\n    launch_skip: [0, 1, 2]\n"
    campaign = write_campaign(targets)
    flags = ("--no-share", "--samples", "2", "--weigh")
    first = run_cli("run", str(campaign), "--out", "runs", *flags, cwd=tmp_path, env=fake_env())
    assert first.returncode == 0, first.stdout + first.stderr
    path = (tmp_path / "runs" / "camp" / "latest").resolve() / "manifest.json"
    manifest = json.loads(path.read_text())
    for record in manifest["targets"][1:]:  # as an interruption leaves them
        record.update(status="pending", message="", attempts=[], report=None, results=[], obtained=None)
    manifest.update(state="interrupted", gpu_time=None)
    path.write_text(json.dumps(manifest))
    resumed = run_cli("run", str(campaign), "--out", "runs", "--resume", cwd=tmp_path, env=fake_env())
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = json.loads(path.read_text())
    assert [t["status"] for t in after["targets"]] == ["ok"] * 3
    assert len(after["targets"][0]["attempts"]) == 1  # done and unchanged: not run again (same --samples)
    assert not after["shared_runs"] or all(r["name"].startswith("shared/timing-") for r in after["shared_runs"])
    assert {t["obtained"]["how"] for t in after["targets"][1:]} == {"alone"}  # still --no-share
    assert all(t["expected_results"] == 2 for t in after["targets"])  # still --samples 2
    assert after["gpu_time"] is not None  # still --weigh
