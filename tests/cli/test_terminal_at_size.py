"""What a run and summarize print at the sizes users bring: over FOLD_AT targets a run says what it is doing, a
line for each target that is not ok and how far it is a tenth at a time, each cause that closed several targets
once, a table of those not ok, and one tally; summarize one table, a row a target."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.share.text import PLAN_NAMES, short_names
from ncucampaign.results.run_summary import CAUSE_AT, FOLD_AT, causes, own_time_line, tally_line
from tests.conftest import load_manifest, run_cli
from tests.manifests import manifest_with, target_record

pytestmark = pytest.mark.slow  # runs of 60 targets on the fake ncu

GOOD = FOLD_AT + 5
STEPS = "args: [--steps, '20']"


def many(good: int = GOOD, typos: int = CAUSE_AT) -> str:
    """`good` rmsnorm launches (the fake application's 20 steps hold 81), and `typos` targets that miss."""
    return (
        f"- name: rms_{{launch_skip}}\n  kernel_name: rmsnorm_kernel\n  matrix:\n    launch_skip: {list(range(good))}\n"
        f"- name: typo_{{launch_skip}}\n  kernel_name: rmsnorm_kernal\n  matrix:\n    launch_skip: {list(range(typos))}\n"
    )


def test_a_run_of_many_targets_says_each_cause_once_and_ends_with_a_table_of_those_not_ok_and_a_tally(
    tmp_path: Path, write_campaign
) -> None:
    campaign = write_campaign(many(), STEPS)
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    total = GOOD + CAUSE_AT
    assert f"{total} targets: {GOOD} ok, {CAUSE_AT} no_kernels" in out  # the one tally
    assert f"{CAUSE_AT} targets no_kernels (typo_0, typo_1, typo_2):" in out  # the cause, once, before the table
    assert out.index("targets no_kernels (typo_0") < out.index("  target ")
    rows = [line for line in out.splitlines() if line.startswith("  rms_") or line.startswith("  typo_")]
    assert [row.split("  ")[1] for row in rows] == ["typo_0, typo_1, typo_2"]  # the table: those not ok, a cause a row
    assert f"{GOOD} more targets ok: not shown one by one" in out
    finished = [line for line in out.splitlines() if line.startswith("[")]
    assert not [line for line in finished if " ok " in line and "rms_" in line]  # no line a target that is ok
    assert f"[{total}/{total}] " in out  # but how far the run got, a tenth at a time
    assert "planning the shared runs of" in out and "the discovery trace of" in out  # what it is doing
    every = run_cli("run", str(campaign), "--out", "runs", "--all", cwd=tmp_path)
    assert len([line for line in every.stdout.splitlines() if line.startswith("  rms_")]) == GOOD


def test_summarize_of_many_targets_is_one_table_a_row_each(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(many(typos=1), STEPS)
    run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    run_dir, _ = load_manifest(tmp_path / "runs")
    done = run_cli("summarize", str(run_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith(f"{GOOD + 1} targets, a row each (its first result)")
    assert sum(1 for line in lines if line.startswith("  rms_") or line.startswith("  typo_")) == GOOD + 1
    one = run_cli("summarize", str(run_dir), "--target", "rms_3", cwd=tmp_path)
    assert one.stdout.startswith("rms_3: ok") and "rms_4" not in one.stdout
    unknown = run_cli("summarize", str(run_dir), "--target", "nope", cwd=tmp_path)
    assert unknown.returncode == 2 and "no target nope" in unknown.stderr
    tables = run_cli("summarize", str(run_dir), "--all", cwd=tmp_path)
    assert sum(1 for line in tables.stdout.splitlines() if ": ok (" in line) == GOOD  # a table each


def test_the_closing_lines_at_any_size() -> None:
    records = [target_record(f"t{i}") for i in range(4)] + [
        target_record(f"f{i}", Status.APP_FAILED, message="error: MODEL_DIR is not set") for i in range(CAUSE_AT)
    ]
    records.append(target_record("lone", Status.NO_KERNELS, message="no kernels were profiled"))
    manifest = manifest_with(records)
    assert tally_line(manifest) == f"8 targets: 4 ok, {CAUSE_AT} app_failed, 1 no_kernels"
    (cause,) = causes(manifest.targets)  # a message that closed one target is not a cause of many
    assert cause.line() == f"{CAUSE_AT} targets app_failed (f0, f1, f2): error: MODEL_DIR is not set"
    manifest.started_at, manifest.ended_at = "2026-01-01T00:00:00+00:00", "2026-01-01T00:01:00+00:00"
    manifest.own_seconds = {"planning": 2.0, "records": 1.0}
    assert own_time_line(manifest) is None  # 3 s of 60: not worth a line
    manifest.own_seconds = {"planning": 8.0, "records": 4.0}
    assert own_time_line(manifest) == (
        "own time: 12.0 s of this run's 60.0 s (20%) were ncucampaign's: planning 8.0 s, records 4.0 s"
    )
    # the process's own seconds where known: a run of a second, its times whole seconds, said 116% of them
    manifest.ended_at, manifest.own_seconds = manifest.started_at.replace(":00+", ":01+"), {"planning": 1.2}
    assert "1.2 s of this run's 2.5 s (48%)" in str(own_time_line(manifest, 2.5))


def test_long_member_lists_are_shortened() -> None:
    names = [f"rms_{i}" for i in range(150)] + [f"gemm_{i}" for i in range(150)]
    assert short_names(names) == "rms_0, rms_1, rms_2 ... gemm_149, 300 targets"
    assert short_names(names[:6]) == ", ".join(names[:6])
    assert len(short_names(names, shown=PLAN_NAMES)) < 400


CUDNN = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"


@pytest.mark.parametrize("width", [50, 80])
def test_findings_break_a_kernel_name_longer_than_a_line_at_its_joints(width: int) -> None:
    """llama_serve's findings at 80 columns (H200): cuDNN's 104-character name broke as `cudnn_` at one line's end
    and the rest at whatever column the next ended. Now it starts a line of its own and breaks after a `_`, and
    nothing of it is lost."""
    from ncucampaign.commands.findings import fitted

    line = f"   kernels: elementwise_kernel, nvjet_sm90_tst_48x64_64x15_4x2_h_bz_TNN, {CUDNN}, reduce_kernel"
    pieces = [x.strip() for x in fitted(line, width).splitlines()]
    assert all(len(x) < width for x in fitted(line, width).splitlines())
    start = next(i for i, x in enumerate(pieces) if x.startswith("cudnn_"))
    end = next(i for i, x in enumerate(pieces) if i >= start and CUDNN[-8:] + "," in x)
    assert "".join(pieces[start : end + 1]).split(",")[0] == CUDNN
    assert all(x.endswith("_") for x in pieces[start:end])
    assert CUDNN in fitted(line, 120)  # whole where a line holds it
