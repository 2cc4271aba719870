"""Diagnosis of misses from real ncu logs, the discovery core, and `discover` against the fake ncu."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ncucampaign.discover.analysis import (
    nvtx_scope,
    profiled_ordinals,
    readable,
    suggest_targets,
    suggestions_yaml,
    summarize_kernels,
    target_name,
)
from ncucampaign.execute.attempt.classify import ConsoleSummary, parse_console
from ncucampaign.execute.attempt.diagnose import closest_kernels, diagnose, suggest_filter
from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.expand import build_plan
from ncucampaign.results.reading.reader import ReportedLaunch
from ncucampaign.spec.loader import parse_campaign
from ncucampaign.spec.model import TargetOptions
from ncucampaign.spec.ncu_grammar import escape_regex
from tests.conftest import fake_env, load_manifest, run_cli, target

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


def console_of(name: str):
    return parse_console((LOGS / f"{name}.log").read_text())


# --- diagnose -------------------------------------------------------------------------------------------


def test_misspelled_kernel_name_is_diagnosed_from_nomatch_log() -> None:
    hints = diagnose(TargetOptions(kernel_name="rmsnrom_kernel"), console_of("nomatch"), Status.NO_KERNELS)
    assert hints[0] == "no kernel matches 'rmsnrom_kernel'; closest available: rmsnorm_kernel"
    assert hints[1] == "kernel_name: rmsnorm_kernel"
    assert len(hints) == 2  # the cause is found: no generic advice after it


def test_a_cublas_kernel_another_gpu_launched_is_said_to_be_picked_per_gpu_not_misspelt() -> None:
    """On an H100, a campaign made on an H200 named `nvjet_sm90_tst_128x256_64x4_1x2_h_bz_coopA_NTN`; the hint was
    `kernel_name:` the nearest other GEMM, a different kernel."""
    from ncucampaign.execute.attempt.classify import ConsoleSummary

    available = [
        "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT",
        "nvjet_sm90_tst_176x128_64x5_1x2_h_bz_TNN",
        "splitKreduce_kernel",
    ]
    console = ConsoleSummary(available_kernels=tuple(available))
    for wanted in ("nvjet_sm90_tst_128x256_64x4_1x2_h_bz_coopA_NTN", "regex:^nvjet_sm90_tst_128x256"):
        hints = diagnose(TargetOptions(kernel_name=wanted), console, Status.NO_KERNELS)
        assert hints[0].startswith(f"no kernel matches {wanted!r}; closest available: nvjet_sm90_tst_"), hints
        assert "by GPU model and problem shape" in hints[1] and len(hints) == 2, hints  # no `kernel_name:` to paste


def test_misspelled_regex_is_diagnosed_too() -> None:
    hints = diagnose(TargetOptions(kernel_name="regex:.*splitK_reduce.*"), console_of("nomatch"), Status.NO_KERNELS)
    assert "splitKreduce_kernel" in hints[0]


def test_nvtx_without_slash_is_diagnosed_from_its_log() -> None:
    hints = diagnose(TargetOptions(nvtx_include=("decode_step",)), console_of("nvtx_noslash"), Status.NO_KERNELS)
    assert hints == [
        "ncu: the NVTX include expressions match only start/end ranges. Ranges from torch.cuda.nvtx.range_push "
        "or ncu_range() are push/pop ranges, written with a trailing '/': nvtx_include: 'decode_step/'"
    ]


def test_a_kernel_that_ran_points_at_the_other_filters() -> None:
    options = TargetOptions(
        kernel_name="rmsnorm_kernel", nvtx_include=("x/",), launch_skip=99, profile_from_start=False
    )
    hints = diagnose(options, console_of("nomatch"), Status.NO_KERNELS)
    assert hints[0].startswith("'rmsnorm_kernel' matches the kernel filter and did run")
    assert any("nvtx_push_pop_scope: process" in h for h in hints)
    assert any("cudaProfilerStart" in h for h in hints)
    assert any("launch_skip 99" in h for h in hints)


def test_child_process_hint() -> None:
    hints = diagnose(TargetOptions(target_processes="application-only"), console_of("nomatch"), Status.NO_KERNELS)
    assert any("target_processes: all" in h for h in hints)


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        ("bad_section", "unknown section 'NoSuchSection'"),
        ("bad_option", "ncu has no option '--bogus-option'"),
        ("bad_regex", "regex engine rejected"),
        ("missing_exe", "'no_such_binary_xyz' is not an executable"),
    ],
)
def test_usage_errors_are_explained(log: str, expected: str) -> None:
    assert expected in diagnose(TargetOptions(), console_of(log), Status.USAGE_ERROR)[0]


def test_section_typo_gets_a_suggestion() -> None:
    console = parse_console("==ERROR== Option '--section SpeedOfLite' did not match any section.\n")
    assert "did you mean SpeedOfLight" in diagnose(TargetOptions(), console, Status.USAGE_ERROR)[0]


def test_suggested_filters() -> None:
    assert suggest_filter(["rmsnorm_kernel"]) == "rmsnorm_kernel"
    assert suggest_filter(["nvjet_sm90_a_NNT", "nvjet_sm90_b_NNT"]) == "regex:nvjet_sm90_"
    assert suggest_filter(["ab", "cd"]) == "regex:^(ab|cd)$"
    assert escape_regex("f<int>(a.b)") == "f<int>\\(a\\.b\\)"
    assert closest_kernels("gemm", ["rmsnorm_kernel", "CatArrayBatchedCopy"]) == []


# --- discovery core --------------------------------------------------------------------------------------


def launch(ordinal: int, function: str, ns: float, nvtx: str = "", demangled: str | None = None) -> ReportedLaunch:
    return ReportedLaunch(ordinal, function, demangled or function, ns, (nvtx,) if nvtx else (), 0, 0, ordinal)


LAUNCHES = sorted(
    [
        launch(0, "gemm", 10.0, "prefill"),
        *[launch(1 + i * 3, "gemm", 20.0, "decode_step/layer/mlp") for i in range(4)],
        *[launch(2 + i * 3, "attn", 5.0, "decode_step/layer/attention") for i in range(4)],
        *[launch(3 + i * 3, "copy", 1.0) for i in range(4)],
    ],
    key=lambda x: x.ordinal,
)


def test_kernels_are_summarized_by_time() -> None:
    kernels = summarize_kernels(LAUNCHES)
    assert [k.function for k in kernels] == ["gemm", "attn", "copy"]
    gemm = kernels[0]
    assert (gemm.launches, gemm.total_ns, gemm.mean_ns) == (5, 90.0, 18.0)
    assert gemm.share == pytest.approx(90 / 114)
    assert gemm.nvtx == (("decode_step/layer/mlp", 4), ("prefill", 1))
    assert sum(k.launches for k in kernels) == len(LAUNCHES)


def test_nvtx_scope_expressions() -> None:
    assert nvtx_scope("decode_step/layer/attention") == "decode_step/*/attention/"
    assert nvtx_scope("decode_step") == "decode_step/"
    assert nvtx_scope("D@a/b") == "D@a/*/b/"


def test_suggestions_count_launches_with_the_nvtx_filter() -> None:
    kernels = summarize_kernels(LAUNCHES)
    asked = []

    def in_scope(expression: str) -> set[tuple[int, int]]:
        asked.append(expression)
        wanted = expression.split("/")[-2]
        return {(0, x.action_index) for x in LAUNCHES if x.nvtx and x.nvtx[0].endswith(wanted)}

    suggestions = suggest_targets(kernels, LAUNCHES, in_scope, top=3)
    gemm = suggestions[0]
    assert gemm.options == {
        "nvtx_include": "decode_step/*/mlp/",
        "kernel_name": "gemm",
        "launch_skip": 1,
        "launch_count": 1,
    }
    assert "picks launch 2 of the 4 that match" in gemm.comment  # the prefill launch does not count
    assert suggestions[2].options == {"kernel_name": "copy", "launch_skip": 1, "launch_count": 1}
    assert asked == ["decode_step/*/mlp/", "decode_step/*/attention/"]
    nth = suggest_targets(kernels, LAUNCHES, in_scope, top=1, nth=4)[0]
    assert nth.options["launch_skip"] == 3
    text = suggestions_yaml(suggestions)
    pasted = parse_campaign(
        "application:\n  command: x\ntargets:\n" + "\n".join("  " + line for line in text.splitlines()), Path("c.yaml")
    )
    assert [t.name for t in pasted.campaign.targets] == ["gemm", "attn", "copy"]


def test_a_template_instance_is_picked_by_its_function_name_and_skip_not_by_a_regex() -> None:
    long = "void at::native::elementwise_kernel<128, 2, at::native::MulFunctor<float>>(int, T3)"
    launches = [
        launch(0, "k", 1.0, demangled="k<half>(int)"),
        *[launch(1 + 2 * i, "k", 2.0, demangled=long) for i in range(3)],
        *[launch(2 + 2 * i, "k", 0.1, demangled="k<half>(int)") for i in range(3)],
    ]
    launches.sort(key=lambda x: x.ordinal)
    suggestion = suggest_targets(summarize_kernels(launches), launches, None, top=1)[0]
    # the middle of long's 3 launches is ordinal 3, the 4th launch named k: skip 3
    assert suggestion.options == {"kernel_name": "k", "launch_skip": 3, "launch_count": 1}
    assert suggestion.discovery_ordinal == 3 and suggestion.matching == 7
    assert "elementwise_kernel<128, 2, MulFunctor<float>>: one of 2 instances of k" in suggestion.comment
    assert "launch 2 of this instance's 3" in suggestion.comment
    first = suggest_targets(summarize_kernels(launches), launches, None, top=1, nth=1)[0]
    assert first.options["launch_skip"] == 1 and first.discovery_ordinal == 1


def test_the_kernel_table_keeps_both_ends_of_a_long_function_name() -> None:
    """moe_train's discover table cut two cuBLAS kernels at their ends: `..._h_bz_bia…` for `..._bias_TNT`."""
    import io

    from rich.console import Console

    from ncucampaign.discover.tables import kernel_table

    names = ["nvjet_sm90_tst_64x48_64x15_2x4_h_bz_bias_TNT", "nvjet_sm90_tst_96x64_64x10_1x2_h_bz_bias_TNN"]
    launches = [launch(i, name, 5.0) for i, name in enumerate(names)]
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(kernel_table(summarize_kernels(launches), 2, 300))
    rows = [line.split()[0] for line in out.getvalue().splitlines() if line.strip().startswith("nvjet")]
    assert len(rows) == 2 and rows[0].endswith("bias_TNT") and rows[1].endswith("bias_TNN"), rows
    assert all(len(row) <= 40 and "…" in row for row in rows), rows


def test_template_names_read_from_what_tells_them_apart() -> None:
    copy = (
        "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_"
        "kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 3)]::operator ()() const>(int, T3)"
    )
    assert readable(copy) == (
        "elementwise_kernel<128, 2, gpu_kernel_impl_nocast<direct_copy_kernel_cuda(TensorIteratorBase &)"
        "::[lambda() (instance 3)]::operator ()() const>"
    )
    dropout = "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float>(int)"
    assert readable(dropout) == "fused_dropout_kernel_vec<BFloat16, float>"
    assert readable("_rms_norm_fwd") == "_rms_norm_fwd" and readable("kernel(float*)") == "kernel"


def test_scoped_suggestions_keep_the_scope() -> None:
    launches = [launch(i, "k", 1.0, "decode_step") for i in range(5)]
    base = {"nvtx_include": ["decode_step/"], "range_filter": "::8"}
    suggestion = suggest_targets(summarize_kernels(launches), launches, None, base, top=1)[0]
    assert suggestion.options == {**base, "kernel_name": "k", "launch_skip": 2, "launch_count": 1}


def test_target_launches_are_marked() -> None:
    profiled = profiled_ordinals(LAUNCHES[:6], TargetOptions(launch_skip=2, launch_count=2))
    assert [launch.ordinal in profiled for launch in LAUNCHES[:6]] == [False, False, True, True, False, False]
    assert target_name("void cutlass::Kernel<X>") == "void_cutlass_Kernel_X"


# --- discover, end to end with the fake ncu --------------------------------------------------------------

pytestmark_linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups via /proc")
ncu_report = pytest.importorskip("ncu_report", reason="discover reads reports")


@pytest.mark.versions
@pytest.mark.slow
@pytestmark_linux
def test_discover_lists_kernels_and_writes_targets(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: norm\n  kernel_name: rmsnorm_kernel\n  launch_skip: 2\n")
    env = fake_env(FAKE_NCU_FIXTURE="rangefilter_multi")  # 8 rmsnorm launches in decode_step ranges
    done = run_cli("discover", str(campaign), "--out", "runs", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs", "camp-discover")
    argv = target(manifest, "discover")["argv"]
    assert argv[argv.index("--metrics") + 1] == "gpu__time_duration.sum"
    assert "--nvtx" in argv and "--kernel-name" not in argv  # the whole application, not the target
    listing = json.loads((run_dir / "kernels.json").read_text())
    assert len(listing["launches"]) == 8 and listing["kernels"][0]["function"] == "rmsnorm_kernel"
    assert "kernel_name: rmsnorm_kernel" in (run_dir / "targets.yaml").read_text()
    assert "rmsnorm_kernel" in done.stdout and "launch_skip: 3" in done.stdout


@pytest.mark.slow
@pytestmark_linux
def test_discover_target_uses_the_target_filters_and_marks_its_launch(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: norm\n  kernel_name: rmsnorm_kernel\n  launch_skip: 2\n")
    env = fake_env(FAKE_NCU_FIXTURE="rangefilter_multi")
    done = run_cli("discover", str(campaign), "--target", "norm", "--out", "runs", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs", "camp-discover")
    argv = target(manifest, "discover")["argv"]
    assert argv[argv.index("--kernel-name") + 1] == "rmsnorm_kernel"
    assert "--launch-skip" not in argv
    listing = json.loads((run_dir / "kernels.json").read_text())
    assert [item["ordinal"] for item in listing["listed"] if item["profiled"]] == [2]
    assert "profile #2" in done.stdout


@pytest.mark.slow
@pytestmark_linux
def test_discover_a_bare_command(tmp_path: Path) -> None:
    env = fake_env(FAKE_NCU_FIXTURE="name_exact")
    done = run_cli(
        "discover",
        "--out",
        "runs",
        "--",
        sys.executable,
        str(Path(__file__).resolve().parents[1] / "fake_ncu" / "fake_app.py"),
        "--steps",
        "1",
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "runs" / "discover" / "latest" / "kernels.json").is_file()


@pytest.mark.slow
def test_discover_needs_a_campaign_for_target(tmp_path: Path) -> None:
    done = run_cli("discover", "--target", "x", "--", "python3", "x.py", cwd=tmp_path)
    assert done.returncode == 2 and "need a campaign file" in done.stderr


@pytest.mark.slow
def test_no_kernels_diagnosis_reaches_the_manifest_and_console(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: typo\n  kernel_name: rmsnrom_kernel\n")
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    assert done.returncode == 1
    _, manifest = load_manifest(tmp_path / "runs")
    assert target(manifest, "typo")["diagnosis"][-1] == "kernel_name: rmsnorm_kernel"
    assert "hint: kernel_name: rmsnorm_kernel" in done.stdout


@pytest.mark.slow
def test_validate_strict_fails_on_warnings(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text("application:\n  command: x\ntargets:\n  - name: a\n    nvtx_include: step\n")
    loose = run_cli("validate", "camp.yaml", cwd=tmp_path)
    assert loose.returncode == 0 and "warning NCU001" in loose.stderr
    strict = run_cli("validate", "--strict", "camp.yaml", cwd=tmp_path)
    assert strict.returncode == 2 and "not ok" in strict.stdout


def test_plan_of_the_example_stays_quiet(tmp_path: Path) -> None:
    loaded = parse_campaign(
        (Path(__file__).resolve().parents[2] / "campaigns" / "decode.yaml").read_text(), Path("decode.yaml")
    )
    assert build_plan(loaded).invocations


def test_ncus_push_pop_note_is_a_possibility_not_the_cause() -> None:
    # ncu adds the note to every miss of an expression with '/', even when the kernel name is wrong
    noted = replace(console_of("nomatch"), nvtx_push_pop_note=True)
    wrong_name = diagnose(
        TargetOptions(nvtx_include=("decode_step/",), kernel_name="rmsnrom_kernel"), noted, Status.NO_KERNELS
    )
    assert wrong_name == [
        "no kernel matches 'rmsnrom_kernel'; closest available: rmsnorm_kernel",
        "kernel_name: rmsnorm_kernel",
    ]
    open_cause = diagnose(TargetOptions(nvtx_include=("decode_step/",)), noted, Status.NO_KERNELS)
    assert open_cause[0].startswith(
        "ncu notes that expressions with a trailing '/' match only push/pop ranges: only if"
    )
    assert any("nvtx_push_pop_scope: process" in h for h in open_cause[1:])  # the other checks follow


def test_listed_kernels_mean_ncu_connected() -> None:
    listed = ConsoleSummary(no_kernels=True, available_kernels=("rmsnorm_kernel",))
    hints = diagnose(TargetOptions(kernel_name="rmsnorm_kernel", launch_skip=50), listed, Status.NO_KERNELS)
    assert not any("never connected" in h for h in hints)
    assert any(
        "never connected" in h for h in diagnose(TargetOptions(), ConsoleSummary(no_kernels=True), Status.NO_KERNELS)
    )


def test_a_regex_of_short_words_is_not_matched_to_an_unrelated_kernel() -> None:
    # the H200 training loop: cuBLAS's fp32 GEMM is Kernel2, and the hint named an elementwise kernel
    listed = ConsoleSummary(
        no_kernels=True, available_kernels=("Kernel2", "reduce_kernel", "vectorized_elementwise_kernel")
    )
    hints = diagnose(TargetOptions(kernel_name="regex:(gemm|nvjet|cutlass|sm90)"), listed, Status.NO_KERNELS)
    assert hints == [
        "no available kernel resembles 'regex:(gemm|nvjet|cutlass|sm90)'; ncu saw: Kernel2, reduce_kernel, "
        "vectorized_elementwise_kernel"
    ]
    assert closest_kernels("rmsnrm", ["rmsnorm_kernel", "reduce_kernel"]) == ["rmsnorm_kernel"]  # a typo still is


def test_a_misspelt_name_is_told_the_name_it_misspells_not_a_regex_over_every_name_holding_it() -> None:
    """moe_train on the H100: `elementwies_kernel` was told `kernel_name: regex:elementwise_kernel`, which selects six
    kernels (every name holding `elementwise_kernel` matched as well as the name itself), and its closest list began
    with `_scatter_gather_elementwise_kernel`, first by the alphabet."""
    available = ("_scatter_gather_elementwise_kernel", "elementwise_kernel", "elementwise_kernel_with_index",
                 "index_elementwise_kernel", "unrolled_elementwise_kernel", "vectorized_elementwise_kernel")  # fmt: skip
    hints = diagnose(
        TargetOptions(kernel_name="elementwies_kernel"),
        ConsoleSummary(no_kernels=True, available_kernels=available),
        Status.NO_KERNELS,
    )
    assert hints[0].startswith("no kernel matches 'elementwies_kernel'; closest available: elementwise_kernel, "), hints
    assert hints[-1] == "kernel_name: elementwise_kernel", hints
    # where several names are as close, whole and in part, the regex that selects exactly them stays the suggestion
    tied = diagnose(
        TargetOptions(kernel_name="rmsnorm_kernl"),
        ConsoleSummary(no_kernels=True, available_kernels=("rmsnorm_kernel_a", "rmsnorm_kernel_b", "copy")),
        Status.NO_KERNELS,
    )
    assert tied[-1] == f"kernel_name: regex:{escape_regex('rmsnorm_kernel_')}", tied


def test_a_suggested_cublas_kernel_says_it_holds_for_this_gpu_model() -> None:
    launches = [launch(i, "nvjet_sm90_tst_128x256_64x4_1x2_h_bz_coopA_NTN" if i % 2 else "copy", 9.0) for i in range(6)]
    suggestions = {s.name: s for s in suggest_targets(summarize_kernels(launches), launches, None, top=2)}
    [gemm] = [s for name, s in suggestions.items() if name.startswith("nvjet")]
    assert "cuBLAS or cuDNN picked it for this GPU model and shape" in gemm.comment
    assert "picked it" not in suggestions["copy"].comment
