"""Findings weighted by GPU time: the timing pass's listing summed per kernel, each
target's share, and the ranking by estimated application gain with its arithmetic."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ncucampaign.execute.rundir.manifest import GpuTime, KernelTime, Manifest, TargetRecord
from ncucampaign.execute.rundir.result_records import ResultRecord
from ncucampaign.execute.timing_pass import gpu_time_of, target_shares
from ncucampaign.results.findings import Finding, group_text, rank, shares_of_shown
from ncucampaign.results.reading.rules import RuleResult
from ncucampaign.results.weights import GainTerm, gpu_time_summary, kernel_names, shares_by_kernel
from tests.conftest import fake_env, run_cli
from tests.manifests import manifest_with, target_record

LISTING = """\
"ID","Process ID","Kernel Name","gpu__time_duration.sum"
"","","","{unit}"
"0","7","nvjet_gemm","{gemm}"
"1","7","rmsnorm_kernel","{norm}"
"2","7","nvjet_gemm","{gemm}"
"3","7","flash_attention","{flash}"
"""


def listing(unit: str = "ns", gemm: str = "20,000", norm: str = "2,600", flash: str = "15,400") -> str:
    return LISTING.format(unit=unit, gemm=gemm, norm=norm, flash=flash)


def test_the_timing_listing_is_summed_per_kernel_in_nanoseconds_largest_first() -> None:
    timing = gpu_time_of(listing(), limit=100, run="shared/timing-x")
    assert [(k.kernel, k.launches, k.ns) for k in timing.kernels] == [
        ("nvjet_gemm", 2, 40_000.0),
        ("flash_attention", 1, 15_400.0),
        ("rmsnorm_kernel", 1, 2_600.0),
    ]
    assert timing.total_ns == 58_000.0 and timing.launches == 4 and timing.complete


def test_durations_printed_in_microseconds_are_scaled_and_an_unknown_unit_gives_no_shares() -> None:
    in_us = gpu_time_of(listing("us", "20", "2.6", "15.4"), limit=100, run="t")
    assert in_us.total_ns == pytest.approx(58_000.0)
    assert gpu_time_of(listing("furlong"), limit=100, run="t").total_ns == 0.0


def test_a_pass_that_reached_its_launch_limit_says_its_shares_are_of_the_first_launches() -> None:
    timing = gpu_time_of(listing(), limit=4, run="t")
    assert not timing.complete


def weighed(targets: list[TargetRecord], kernels: dict[str, float]) -> Manifest:
    manifest = manifest_with(targets)
    manifest.gpu_time = GpuTime(
        run="shared/timing-x",
        launches=10,
        complete=True,
        total_ns=sum(kernels.values()),
        kernels=[KernelTime(kernel=f, launches=1, ns=ns) for f, ns in kernels.items()],
    )
    return manifest


def profiled(name: str, kernel: str) -> TargetRecord:
    result = ResultRecord(index=0, kernel=kernel, demangled=kernel, workload="kernel")
    return target_record(name, results=[result])


def rule(kernel: str, title: str, speedup: float | None) -> RuleResult:
    return RuleResult(0, kernel, title.replace(" ", ""), title, "S", title, "why", "OPT", speedup, "local", ())


# The case: ncu's own estimate puts a 2.6 us rmsnorm first; the GEMMs hold the GPU time.
FINDINGS = [
    Finding("norm", rule("rmsnorm_kernel", "Low Utilization", 100.0)),
    Finding("norm", rule("rmsnorm_kernel", "Small Grid", 97.0)),
    Finding("gemm", rule("nvjet_gemm", "Long Scoreboard Stalls", 40.0)),
    Finding("attn", rule("flash_attention", "Low Utilization", 30.0)),
]
KERNELS = {"nvjet_gemm": 60_000.0, "flash_attention": 30_000.0, "rmsnorm_kernel": 2_600.0, "other": 7_400.0}


def test_a_small_speedup_shows_the_numbers_its_gain_is_the_product_of() -> None:
    term = GainTerm("k", 0.23, 0.128)
    assert term.arithmetic() == "0.23% x 12.8% of GPU time = 0.0294% for k"  # was "0% x 12.8% ... = 0.03%"
    speedup, share, gain = (float(x) for x in re.findall(r"([0-9.]+)%", term.arithmetic()))
    assert speedup * share / 100 == pytest.approx(gain, rel=0.01)


def test_findings_rank_by_application_gain_with_the_arithmetic_shown() -> None:
    shares = shares_by_kernel(weighed([], KERNELS))
    groups = rank(FINDINGS, shares=shares)
    assert [g.first.title for g in groups] == ["Long Scoreboard Stalls", "Low Utilization", "Small Grid"]
    assert groups[0].gain == pytest.approx(40.0 * 0.6)
    # Low Utilization: 30% of the attention's 30% plus 100% of the rmsnorm's 2.6%
    assert groups[1].gain == pytest.approx(30.0 * 0.3 + 100.0 * 0.026)
    text = "\n".join(group_text(1, groups[1]))
    assert "est. application gain 11.6% of GPU time = 30.0% x 30.0% of GPU time = 9.00% for flash_attention" in text
    assert "100% x 2.60% of GPU time = 2.60% for rmsnorm_kernel" in text
    held = shares_of_shown(groups)
    assert held is not None and held == pytest.approx(0.926) and held <= 1.0


def test_a_findings_heading_quotes_the_kernel_its_gain_names() -> None:
    """Before the fix: the heading quoted the GEMM's 27% while the gain line was the rmsnorm's 0.266%, and the
    kernel line named the GEMM first."""
    findings = [
        Finding("full", rule("nvjet_gemm", "Low Compression Rate", 27.0)),
        Finding("full", rule("rmsnorm_kernel", "Low Compression Rate", 0.266)),
    ]
    shares = shares_by_kernel(weighed([], {"rmsnorm_kernel": 12.9, "other": 87.1}))  # the GEMM was not timed
    (group,) = rank(findings, shares=shares)
    heading, gain, _, kernel, _ = group_text(1, group)
    assert "est. speedup 0.266% (local)" in heading and gain.endswith("for rmsnorm_kernel")
    assert kernel == "   kernels: rmsnorm_kernel, nvjet_gemm"
    assert group.best_speedup == 27.0  # what ranks it without a gain


def test_without_shares_the_ranking_is_ncus_own_and_says_so() -> None:
    groups = rank(FINDINGS)
    assert groups[0].first.title == "Low Utilization" and groups[0].gain is None
    assert all(not line.strip().startswith("est. application gain") for line in group_text(1, groups[0]))
    assert "no GPU-time share known" in gpu_time_summary(manifest_with([]))


def test_each_target_gets_the_share_of_the_kernels_its_results_profiled() -> None:
    manifest = weighed([profiled("gemm", "nvjet_gemm"), profiled("odd", "untimed")], KERNELS)
    target_shares(manifest)
    shares = {t.name: t.gpu_time_share for t in manifest.targets}
    assert shares == {"gemm": pytest.approx(0.6), "odd": None}


@pytest.mark.versions
@pytest.mark.slow
def test_run_weigh_records_shares_and_a_second_run_reuses_the_cached_pass(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: norm\n  kernel_name: rmsnorm_kernel\n")
    env = fake_env(FAKE_NCU_FIXTURE="name_exact")  # one rmsnorm_kernel result
    first = run_cli("run", str(campaign), "--weigh", "--out", "runs", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert "GPU time: " in first.stdout and "launches timed" in first.stdout
    manifest = json.loads((tmp_path / "runs/camp/latest/manifest.json").read_text())
    timing = manifest["gpu_time"]
    ns = [k["ns"] for k in timing["kernels"]]
    assert ns == sorted(ns, reverse=True) and timing["total_ns"] == sum(ns) and timing["complete"]
    norm = next(k for k in timing["kernels"] if k["kernel"] == "rmsnorm_kernel")
    assert manifest["targets"][0]["gpu_time_share"] == pytest.approx(norm["ns"] / timing["total_ns"])
    assert any(r["name"] == timing["run"] for r in manifest["shared_runs"])  # the pass ran in this run
    second = run_cli("run", str(campaign), "--weigh", "--out", "runs", cwd=tmp_path, env=env)
    again = json.loads((tmp_path / "runs/camp/latest/manifest.json").read_text())
    assert second.returncode == 0 and again["gpu_time"]["kernels"] == timing["kernels"]
    assert not any(r["name"].startswith("shared/timing-") for r in again["shared_runs"])  # taken from the cache
    found = run_cli("findings", "runs/camp/latest", cwd=tmp_path, env=env)
    assert found.stdout.startswith("GPU time: ") and "ranked by estimated application gain" in found.stdout
    # the reused pass is named as such, not by its 64-hex cache file
    cached = again["gpu_time"]["run"]
    for printed in (second.stdout, found.stdout):
        assert "timing pass (cached)" in printed or "(timing pass (cached))" in printed, printed
        assert cached not in printed and Path(cached).name not in printed


@pytest.mark.slow
def test_plan_prints_the_timing_pass_of_a_weighed_campaign(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: norm\n  kernel_name: rmsnorm_kernel\n")
    campaign.write_text(campaign.read_text() + "weigh: true\n")
    done = run_cli("plan", str(campaign), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert "--metrics gpu__time_duration.sum --target-processes all" in last and "--kernel-name" not in last


def test_templated_kernels_of_one_function_name_keep_their_own_shares_by_symbol() -> None:
    # ncu's console and its report reader demangle templates differently (measured on the H200); the
    # symbols are the same on both sides.
    add, silu = (
        "_ZN2at28vectorized_elementwise_kernelILi4EAddEEviT0_",
        "_ZN2at28vectorized_elementwise_kernelILi8ESiluEEviT0_",
    )
    listing = '"ID","Kernel Name","gpu__time_duration.sum"\n"","","ns"\n"0","{}","9,000"\n"1","{}","1,000"\n'
    readable = "void at::vectorized_elementwise_kernel<8, silu>(int, T2)"
    timing = gpu_time_of(listing.format(add, silu), limit=100, run="t", names=listing.format("add<4>", readable))
    result = ResultRecord(
        index=0, kernel="vectorized_elementwise_kernel", demangled="void at::native::vectorized_elementwise_kernel<(int)8, silu>",
        mangled=silu, workload="kernel",
    )  # fmt: skip
    manifest = manifest_with([target_record("silu", results=[result])])
    manifest.gpu_time = timing
    target_shares(manifest)
    assert manifest.targets[0].gpu_time_share == pytest.approx(0.1)  # not the function name's 100%
    found = [Finding("silu", rule("vectorized_elementwise_kernel", "Low Utilization", 50.0), silu)]
    group = rank(found, shares=shares_by_kernel(manifest), names=kernel_names(manifest))[0]
    assert group.gain == pytest.approx(5.0)
    assert group.terms[0].arithmetic() == f"50.0% x 10.0% of GPU time = 5.00% for {readable}"


def test_a_finding_on_many_kernels_names_them_and_says_which_names_are_targets() -> None:
    """moe_train's Small Grid (11 results, 9 kernels) read "9 kernel(s) in elementwise_kernel, ..." (target names
    that discover had made of kernel names) and "kernel: elementwise_kernel (and 8 more)": one kernel named."""
    kernels = [f"kernel_{n}" for n in range(9)]
    findings = [Finding(f"target_{n}", rule(kernels[min(n, 8)], "Small Grid", None)) for n in range(11)]
    (group,) = rank(findings)
    _, where, named, _ = group_text(1, group)
    assert (
        where == "   11 result(s) of 9 kernel(s) in targets target_0, target_1, target_2, target_3, target_4 and 6 more"
    )
    assert named == "   kernels: kernel_0, kernel_1, kernel_2, kernel_3, kernel_4 and 4 more"
    (alone,) = rank(findings[:1])
    assert group_text(1, alone)[1:3] == ["   1 result(s) of 1 kernel(s) in target target_0", "   kernel: kernel_0"]
