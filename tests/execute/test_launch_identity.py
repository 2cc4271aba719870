"""Launch identity across reports, end to end against the fake ncu: launches are matched by symbol
(ncu writes other demangled text for the same launch in another report), a shared run whose threads
interleave differently from the trace's still splits where ncu's numbering per function makes a
member's launches unambiguous and never hands out a wrong split, and refused splits share one more run.
The same rules on real H200 listings: tests/plan/test_launch_identity_on_real_listings.py."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import fake_env, load_manifest
from tests.execute.shared_campaigns import TRACE_TARGETS, obtained, profiled_launch, run

pytestmark = pytest.mark.slow  # runs the CLI end to end

# The fake application's templated elementwise kernels, with a GEMM: a union of them holds 3 distinct
# kernels, the trace 5, and the fake ncu (like ncu: docs/ncu-behaviour.md, "Launch identity") writes
# the demangled names of a report of at most 3 kernels shortened.
TEMPLATED = """
- name: ew
  kernel_name: regex:elementwise
  matrix:
    launch_skip: [0, 3]
- name: norm
  kernel_name: regex:(rmsnorm|nvjet)
  launch_skip: 4
"""


def listing(report: Path, *options: str) -> list[str]:
    """The "Kernel Name" column of a report's raw page, as the fake ncu lists it."""
    out = subprocess.run(
        ["ncu", "--import", str(report), *options, "--page", "raw", "--csv"],
        capture_output=True,
        text=True,
        env=fake_env(),
        check=True,
    ).stdout
    return [row[3] for row in list(csv.reader(io.StringIO(out)))[2:]]


def test_launches_are_matched_by_symbol_where_two_reports_demangle_them_differently(
    tmp_path: Path, write_campaign
) -> None:
    campaign = write_campaign(TEMPLATED, defaults="args: [--templated]")
    done = run(campaign)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    assert obtained(manifest) == {"ew-0": "shared", "ew-3": "shared", "norm": "shared"}
    trace, union = (run_dir / r["report"]["path"] for r in manifest["shared_runs"] if r["report"])
    # The case this guards: one launch, two demangled texts, one symbol
    in_trace = [name for name in listing(trace) if "Functor" in name]
    in_union = [name for name in listing(union) if "Functor" in name]
    assert in_trace[0] == "void at::vectorized_elementwise_kernel<4, at::AddFunctor<c10::Half>>(int, T2)"
    assert in_union[0] == "void at::vectorized_elementwise_kernel<4, AddFunctor<c10::Half>>(int, T2)"
    symbols = listing(union, "--print-kernel-base", "mangled")
    assert all(symbol in listing(trace, "--print-kernel-base", "mangled") for symbol in symbols)
    # ...and the split holds the launch a run of its own profiles
    separate = tmp_path / "separate"
    separate.mkdir()
    (separate / "camp.yaml").write_text(campaign.read_text())
    assert run(separate / "camp.yaml", "--no-share").returncode == 0
    alone_dir, _ = load_manifest(separate / "runs")
    for name in ("ew-0", "ew-3", "norm"):
        assert profiled_launch(run_dir, name) == profiled_launch(alone_dir, name), name


def launched(run_dir: Path, name: str) -> tuple[str, ...]:
    """The one launch a target's report holds: its kernel and NVTX range names."""
    [(kernel, *stack)] = profiled_launch(run_dir, name)
    return (kernel, *(entry.split(":")[1] for entry in stack))


# Every second run of the fake application launches each layer's attention before its rmsnorm (as two
# threads might): the trace (run 1) and the shared run (run 2) interleave the two functions differently.
INTERLEAVED = """
- name: rms
  kernel_name: rmsnorm_kernel
  matrix:
    launch_skip: [1, 5]
- name: attn
  kernel_name: regex:flash
  launch_skip: 2
- name: both
  kernel_name: regex:(rmsnorm|flash)
  launch_skip: 8
"""


def test_an_interleaving_that_differs_from_the_trace_splits_per_function_and_never_wrong(
    tmp_path: Path, write_campaign
) -> None:
    defaults = f"args: [--interleave-file, {json.dumps(str(tmp_path / 'runs.txt'))}]"
    campaign = write_campaign(INTERLEAVED, defaults=defaults)
    done = run(campaign)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    by = {t["name"]: t for t in manifest["targets"]}
    assert "--kernel-id" in manifest["shared_runs"][1]["shell_command"]  # ncu numbers launches per function
    # Each function's launches are the trace's, in order: these splits hold what their own runs would
    for name in ("rms-1", "rms-5", "attn"):
        assert by[name]["obtained"]["how"] == "shared", by[name]["obtained"]
        assert "each function's launches" in by[name]["obtained"]["verification"]
    assert launched(run_dir, "rms-5") == ("rmsnorm_kernel", "decode_step", "layer")  # step 2, layer 1
    # `both` counts rmsnorm and attention launches together, and wants the 3rd attention: the shared run
    # profiled rmsnorm's 6th launch before it where the trace has it after, so the split's skip would land
    # on that rmsnorm. Refused; its own run (an odd run: the trace's order) holds the attention.
    assert by["both"]["obtained"]["how"] == "alone"
    assert (
        "launch " in by["both"]["obtained"]["reason"]
        and "of the kernels it selects" in by["both"]["obtained"]["reason"]
    )
    kernel, *stack = launched(run_dir, "both")
    assert kernel.startswith("cudnn_generated_fort_native_sdpa") and stack == ["decode_step", "layer", "attention"]


def vary(tmp_path: Path, runs: str = "even") -> str:
    """Defaults whose application launches one more rmsnorm first in the runs named (counted in a file):
    the trace (run 1) and a shared run disagree, as they would with autotuning that depends on timing."""
    return f"args: [--vary-file, {json.dumps(str(tmp_path / 'runs.txt'))}, --vary-runs, '{runs}']"


def test_refused_splits_are_regrouped_into_one_more_shared_run_not_run_alone(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(TRACE_TARGETS, defaults=vary(tmp_path))  # runs 2 and 4 differ
    done = run(campaign)
    assert done.returncode == 0, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    assert set(obtained(manifest).values()) == {"shared"}
    assert [r["name"] for r in manifest["shared_runs"]][1:] == ["shared/1", "shared/2"]  # one more run, no own runs
    assert (tmp_path / "runs.txt").read_text() == "3"  # trace, shared/1, shared/2
    by = {t["name"]: t["obtained"] for t in manifest["targets"]}
    # The extra rmsnorm moves rmsnorm's numbering, not nvjet's: the GEMMs' splits of shared/1 hold
    for name in ("gemm-1", "gemm-2"):
        assert by[name]["shared_run"] == "shared/1" and not by[name]["reason"]
    for name in ("rms-0", "rms-5", "mlp_rms"):
        assert by[name]["shared_run"] == "shared/2"
        assert by[name]["reason"].startswith("its split of shared/1 was not used: the shared run's launch 1 of ")
        assert (
            "rmsnorm_kernel grid (1, 1, 1) block (128, 1, 1) in warmup, the trace says rmsnorm_kernel"
            in by[name]["reason"]
        )
        assert by[name]["reason"].endswith("regrouped into shared/2")
    assert "one more" not in done.stdout and "2 alone" not in done.stdout


def test_a_member_runs_alone_only_when_its_regrouped_split_is_refused_too(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(TRACE_TARGETS, defaults=vary(tmp_path, "2,3"))
    done = run(campaign)
    assert done.returncode == 0, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    by = {t["name"]: t for t in manifest["targets"]}
    assert [r["name"] for r in manifest["shared_runs"]][1:] == ["shared/1", "shared/2"]
    for name in ("rms-0", "rms-5", "mlp_rms"):
        reason = by[name]["obtained"]["reason"]
        assert by[name]["obtained"]["how"] == "alone" and by[name]["status"] == "ok"
        assert reason.startswith("its split of shared/1 was not used: ")
        assert "; regrouped: its split of shared/2 was not used: " in reason
        assert by[name]["attempts"][-1]["message"] != "split out of shared/2"  # its own run
        detail = by[name]["obtained"]["detail"]  # the same with the symbols (the fake's: extern "C" names)
        assert detail.count("rmsnorm_kernel grid (1, 1, 1) block (128, 1, 1) in warmup") == 2
    assert {by[n]["obtained"]["how"] for n in ("gemm-1", "gemm-2")} == {"shared"}


def test_a_garbled_listing_of_the_trace_decides_nothing(tmp_path: Path, write_campaign) -> None:
    """Before the fix: rows of the trace's listing cut in half read as launches that never happened, and
    targets that profile fine alone were decided no_kernels on the trace."""
    campaign = write_campaign(TRACE_TARGETS)
    done = run(campaign, FAKE_NCU_GARBLE_LISTING="5")
    assert done.returncode == 0, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    assert {t["status"] for t in manifest["targets"]} == {"ok"}
    assert "trace" not in obtained(manifest).values()
    reasons = {t["obtained"]["reason"] for t in manifest["targets"]}
    assert any("ncu's listing is garbled" in reason for reason in reasons), reasons
