"""Multi-rank jobs: a collective replayed alone hangs (docs/ncu-behaviour.md, "Multi-rank jobs").
The attempt is stopped early as replay_hang, explained, and linted before anything runs."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from ncucampaign.execute.attempt.classify import ConsoleSummary, classify_attempt, parse_console
from ncucampaign.execute.attempt.replay_hang import replay_hang_hints
from ncucampaign.execute.attempt.stall import StallState
from ncucampaign.execute.process.groups import group_members
from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.collectives import (
    SAMPLE_COLLECTIVES,
    can_match_collective,
    excluding_collectives,
    launcher_of,
)
from ncucampaign.spec.model import TargetOptions
from tests.conftest import FAKE_APP, fake_env, load_manifest, run_cli, target

NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
HANG_LOG = f'==PROF== Profiling "{NCCL}": 0%..'
WARNING = (
    "==WARNING== Launching the workload is taking more time than expected. If this continues to hang, "
    "terminate the profile and re-try by profiling the range of all related launches using '--replay-mode range'."
)
COMPUTE = ("rmsnorm_kernel", "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT", "cudnn_generated_fort_native_sdpa_sm90")


# --- the watch (pure: the clock is passed in) ----------------------------------------------------


def test_a_collective_is_stopped_when_ncu_warns() -> None:
    state = StallState(stall_s=30, started=0.0)
    state.feed(HANG_LOG, now=1.0)
    assert state.reason(now=2.0) is None  # a collective in replay is not a hang by itself
    state.feed("\n" + WARNING + "\n", now=40.0)
    reason = state.reason(now=40.0)
    assert reason is not None and NCCL in reason and "more time than expected" in reason


def test_a_collective_without_progress_is_stopped_after_the_stall_time() -> None:
    state = StallState(stall_s=30, started=0.0)
    state.feed(HANG_LOG, now=1.0)
    assert state.reason(now=30.9) is None
    assert state.reason(now=31.0) == f'no progress for 30 s while replaying the collective kernel "{NCCL}"'


def test_progress_and_finished_kernels_are_not_stalls() -> None:
    state = StallState(stall_s=30, started=0.0)
    state.feed(HANG_LOG, now=1.0)
    state.feed("..50%", now=30.0)  # progress dots keep it alive
    assert state.reason(now=59.0) is None
    state.feed("....100% - 10 passes\n", now=60.0)
    assert state.profiling is None
    assert state.reason(now=1000.0) is None


def test_a_compute_kernel_is_stopped_only_when_the_warning_is_followed_by_silence() -> None:
    state = StallState(stall_s=30, started=0.0)
    state.feed('==PROF== Profiling "rmsnorm_kernel": 0%..', now=1.0)
    state.feed("\n" + WARNING + "\n", now=5.0)
    assert state.reason(now=34.0) is None
    reason = state.reason(now=35.0)
    assert reason is not None and '"rmsnorm_kernel"' in reason and "printed nothing for 30 s" in reason


def test_stall_timeout_zero_never_stops() -> None:
    state = StallState(stall_s=0, started=0.0)
    state.feed(HANG_LOG + "\n" + WARNING, now=1.0)
    assert state.reason(now=10_000.0) is None


def test_a_line_split_across_reads_is_seen_whole() -> None:
    state = StallState(stall_s=30, started=0.0)
    for piece in ("==PROF== Profil", f'ing "{NCCL}', '": 0%.'):
        state.feed(piece, now=1.0)
    assert state.profiling == NCCL


# --- the collective filters (pure) ---------------------------------------------------------------


@pytest.mark.parametrize("kernel_name", [None, "regex:nvjet|rmsnorm", "regex:^rms", "regex:.*"])
def test_the_exclusion_keeps_what_the_filter_selected_except_collectives(kernel_name: str | None) -> None:
    expression = excluding_collectives(kernel_name)
    assert expression is not None and expression.startswith("regex:")
    compiled = re.compile(expression[len("regex:") :])
    original = re.compile(kernel_name[len("regex:") :]) if kernel_name else re.compile("")
    for name in SAMPLE_COLLECTIVES:
        assert not compiled.search(name), name
    for name in COMPUTE:
        assert bool(compiled.search(name)) == bool(original.search(name)), name


def test_an_exact_name_has_no_exclusion() -> None:
    assert excluding_collectives(NCCL) is None


@pytest.mark.parametrize(
    ("options", "matches"),
    [
        ({}, True),
        ({"kernel_name": "regex:.*"}, True),
        ({"kernel_name": "regex:All"}, True),
        ({"kernel_name": "regex:nvjet"}, False),
        ({"kernel_name": "rmsnorm_kernel"}, False),
        ({"kernel_name": NCCL}, True),
        ({"kernel_id": "::regex:nccl:1"}, True),
        ({"kernel_id": "::rmsnorm_kernel:5"}, False),
    ],
)
def test_which_filters_can_match_a_collective(options: dict[str, str], matches: bool) -> None:
    assert (can_match_collective(TargetOptions(**options)) is not None) == matches


@pytest.mark.parametrize(
    ("command", "found"),
    [
        (("torchrun", "--nproc_per_node=2", "train.py"), "torchrun"),
        (("/usr/bin/mpirun", "-np", "8", "python3", "x.py"), "mpirun"),
        (("python3", "-m", "torch.distributed.run", "x.py"), "torch.distributed.run"),
        (("python3", "bench.py", "--workers", "4"), "--workers"),
        (("python3", "bench.py", "--nproc-per-node=2"), "--nproc-per-node"),
        (("python3", "bench.py", "--steps", "4"), None),
    ],
)
def test_multi_process_launchers_are_recognised(command: tuple[str, ...], found: str | None) -> None:
    assert launcher_of(command) == found


# --- classification and diagnosis (pure; ncu's answers are stubbed) ------------------------------


class Checks:
    def __init__(self, accepts: bool | None, communicator: bool) -> None:
        self.accepts, self.communicator = accepts, communicator
        self.asked: list[str] = []

    def accepts_kernel_name(self, expression: str) -> bool | None:
        self.asked.append(expression)
        return self.accepts

    def lists_option(self, flag: str) -> bool | None:
        return self.communicator and flag == "--communicator"


def test_a_stalled_attempt_is_replay_hang_and_not_retried_whatever_ncu_returns() -> None:
    console = parse_console(f"{HANG_LOG}\n{WARNING}\n==ERROR== The application returned an error code (9).\n")
    verdict = classify_attempt(
        exit_code=9, console=console, report_exists=False, results=None, expected=1, stalled="ncu warned"
    )
    assert (verdict.status, verdict.retryable) == (Status.REPLAY_HANG, False)
    assert verdict.message == "stopped early: ncu warned"


def test_the_hints_name_the_kernel_and_the_exclusion_ncu_accepts() -> None:
    console = parse_console(f"{HANG_LOG}\n{WARNING}\n")
    checks = Checks(accepts=True, communicator=False)
    hints = replay_hang_hints(TargetOptions(nvtx_include=("step/",)), console, checks)
    assert NCCL in hints[0] and "waits for them forever" in hints[0]
    assert checks.asked == ["regex:^(?!.*(?:nccl|nvshmem))"]
    assert "kernel_name: 'regex:^(?!.*(?:nccl|nvshmem))' (the installed ncu accepts it)" in hints[1]
    assert any("devices: [0]" in h for h in hints)
    # what was measured on ncu 2025.3.1: no replay mode profiled the collective; not offered as a fix
    assert any("app-range replay of a range around it failed" in h for h in hints)
    assert not any("communicator: shmem," in h for h in hints)


def test_communicator_is_offered_only_when_the_installed_ncu_lists_it() -> None:
    console = parse_console(HANG_LOG)
    hints = replay_hang_hints(TargetOptions(), console, Checks(accepts=False, communicator=True))
    assert "the installed ncu refuses this expression" in hints[1]
    assert any("communicator: shmem, communicator_shmem_num_peers: <ranks>" in h for h in hints)
    assert not any("no replay mode of ncu 2025.3.1" in h for h in hints)


# --- end to end against the fake ncu --------------------------------------------------------------

MULTI_RANK = f"""\
application:
  command: [{json.dumps(sys.executable)}, {json.dumps(str(FAKE_APP))}, --nproc-per-node, "2", --steps, "3", --layers, "1"]
defaults:
  sections: SpeedOfLight
  target_processes: all
  timeout: 300
  retries: 2
  retry_delay: 0
  stop_grace: 5
targets:
  - name: first_kernels_of_step     # every kernel of a step: reaches its all-reduce
    nvtx_include: decode_step/
    launch_count: 5
  - name: gemm
    kernel_name: regex:nvjet
    launch_count: 2
"""


def _hang_run(tmp_path: Path, campaign: str, **env: str) -> tuple[Path, dict]:
    path = tmp_path / "camp.yaml"
    path.write_text(campaign)
    done = run_cli("run", str(path), "--out", str(tmp_path / "runs"), cwd=tmp_path, env=fake_env(**env))
    assert done.returncode == 1, done.stdout + done.stderr
    return load_manifest(tmp_path / "runs")


@pytest.mark.slow
def test_a_collective_target_stops_at_the_warning_with_a_hint_and_leaves_nothing(tmp_path: Path) -> None:
    run_dir, manifest = _hang_run(tmp_path, MULTI_RANK)
    hung = target(manifest, "first_kernels_of_step")
    assert hung["status"] == "replay_hang"
    assert len(hung["attempts"]) == 1  # not retried, although retries: 2
    attempt = hung["attempts"][0]
    assert attempt["signals_sent"][0] == "SIGINT"
    assert "more time than expected" in hung["message"] and NCCL in hung["message"]
    assert any(
        "kernel_name: 'regex:^(?!.*(?:nccl|nvshmem))' (the installed ncu accepts it)" in h for h in hung["diagnosis"]
    )
    assert group_members(attempt["process_group"]) == []
    assert target(manifest, "gemm")["status"] == "ok"
    shown = run_cli("summarize", str(run_dir), cwd=tmp_path)
    assert "replay_hang" in shown.stdout


@pytest.mark.slow
def test_the_suggested_exclusion_pasted_into_the_campaign_runs_ok(tmp_path: Path) -> None:
    _, manifest = _hang_run(tmp_path, MULTI_RANK)
    hint = next(h for h in target(manifest, "first_kernels_of_step")["diagnosis"] if "kernel_name: '" in h)
    expression = re.search(r"kernel_name: '([^']+)'", hint).group(1)
    fixed = MULTI_RANK.replace("    launch_count: 5\n", f"    launch_count: 5\n    kernel_name: '{expression}'\n", 1)
    path = tmp_path / "fixed.yaml"
    path.write_text(fixed)
    done = run_cli("run", str(path), "--out", str(tmp_path / "fixed-runs"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    _, fixed_manifest = load_manifest(tmp_path / "fixed-runs", "fixed")
    assert target(fixed_manifest, "first_kernels_of_step")["status"] == "ok"


@pytest.mark.slow
def test_a_collective_that_stalls_without_a_warning_stops_after_the_stall_time(tmp_path: Path) -> None:
    campaign = MULTI_RANK.replace("  stop_grace: 5\n", "  stop_grace: 5\n  stall_timeout: 1\n")
    _, manifest = _hang_run(tmp_path, campaign, FAKE_NCU_HANG_WARN_S="never")
    hung = target(manifest, "first_kernels_of_step")
    assert hung["status"] == "replay_hang"
    assert "no progress for" in hung["message"] and NCCL in hung["message"]


@pytest.mark.slow
def test_the_lint_warns_before_anything_runs(tmp_path: Path) -> None:
    path = tmp_path / "camp.yaml"
    path.write_text(MULTI_RANK)
    done = run_cli("validate", str(path), cwd=tmp_path)
    warned = [line for line in done.stderr.splitlines() + done.stdout.splitlines() if "NCU011" in line]
    assert len(warned) == 1 and "targets[0]:" in warned[0] and "--nproc-per-node" in warned[0]
    assert "regex:^(?!.*(?:nccl|nvshmem))" in warned[0]


@pytest.mark.parametrize("kernel_name", ["regex:nccl", "regex:^ncclDevKernel_.*", "regex:(?i)NCCL|nvshmem"])
def test_a_filter_of_collectives_only_gets_no_exclusion_that_would_match_nothing(kernel_name: str) -> None:
    # seen on the H200 x2: the hint offered 'regex:^(?!.*(?:nccl|nvshmem)).*(?:nccl)', which selects nothing
    assert excluding_collectives(kernel_name) is None
    console = ConsoleSummary(last_profiled="ncclDevKernel_AllReduce_Sum_bf16_RING_LL")
    hints = replay_hang_hints(TargetOptions(kernel_name=kernel_name), console, None)
    assert any("selects the collective kernels themselves" in hint for hint in hints), hints
    assert not any("(?!" in hint and "kernel_name:" in hint for hint in hints), hints
