"""Launch identity on real listings (tests/fixtures/zoo: ncu 2025.3.1 on an H200, the zoo's workloads;
tests/fixtures/zoo/README.md says how they were made).

- randn_decode: a shared run of RMSNorms and dropouts, listed as ncu lists it. By default ncu shortens
  ("renames") demangled names differently in the trace and in the union's report, so verification by
  demangled text refuses every split; by symbol, the same launches verify.
- streams: a trace of two launching threads. A shared run whose threads interleave otherwise still
  splits where ncu's numbering per function decides, and never hands a member the wrong launch.
- The same real launch sequence, replayed by the fake ncu: a refused split costs one more shared run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from ncucampaign.plan.share.launches import Launch, parse_raw_csv
from ncucampaign.plan.share.windows import (
    MemberWindow,
    UnionWindow,
    member_window,
    picked_window,
    verify_against_trace,
)
from tests.conftest import FIXTURES, load_manifest
from tests.execute.shared_campaigns import obtained, run

ZOO = FIXTURES / "zoo"


def listing(workload: str, report: str, base: str) -> list[Launch]:
    return parse_raw_csv((ZOO / workload / f"{report}.{base}.csv").read_text())


def functions_of(workload: str) -> dict[int, str]:
    return {launch.id: launch.symbol for launch in listing(workload, "trace", "function")}


def stack(launch: Launch) -> tuple[str, ...]:
    return tuple(entry.split(":", 1)[1] for entry in launch.nvtx)


Select = Callable[[Launch, str], bool]  # a member's filters, on a launch and its function name


def window(
    trace: list[Launch], functions: dict[int, str], select: Select, kernel: Select, skip: int, union: UnionWindow
) -> MemberWindow:
    selected = [launch for launch in trace if select(launch, functions[launch.id])]
    kernel_ids = [launch.id for launch in trace if kernel(launch, functions[launch.id])]
    return member_window(selected, skip, (selected[skip],), union, functions, kernel_ids)


# --- randn_decode: shared/2 of its campaign, `--kernel-id ::regex:(dropout)|^_rms_norm_fwd$:3|7|9|20|33 --launch-count 8`


def rms(launch: Launch, function: str) -> bool:
    return function == "_rms_norm_fwd"


def dropout(launch: Launch, function: str) -> bool:
    return "dropout" in function


MEMBERS: dict[str, tuple[Select, Select, int]] = {  # name: its filters, its kernel filter alone, launch_skip
    "dec_rms_0": (lambda x, f: rms(x, f) and "decode_step" in stack(x), rms, 0),
    "dec_rms_17": (lambda x, f: rms(x, f) and "decode_step" in stack(x), rms, 17),
    "dec_rms_30": (lambda x, f: rms(x, f) and "decode_step" in stack(x), rms, 30),
    "dropout": (lambda x, f: dropout(x, f) and "mlp" in stack(x), dropout, 6),
    "rms_metrics": (rms, rms, 8),
}


def randn_union(base: str) -> tuple[list[Launch], dict[int, str], UnionWindow, dict[str, MemberWindow]]:
    trace, functions = listing("randn_decode", "trace", base), functions_of("randn_decode")
    selected = [launch for launch in trace if re.search(r"(dropout)|^_rms_norm_fwd$", functions[launch.id])]
    windows = {}
    wanted = []
    for select, _, skip in MEMBERS.values():
        mine = [launch for launch in trace if select(launch, functions[launch.id])]
        wanted.append((mine[skip],))
    union = picked_window(selected, wanted, functions)
    assert union is not None
    for name, (select, kernel, skip) in MEMBERS.items():
        windows[name] = window(trace, functions, select, kernel, skip, union)
    return trace, functions, union, windows


def test_the_real_shared_run_is_planned_again_from_its_trace() -> None:
    _, _, union, windows = randn_union("mangled")
    assert union.invocations == (3, 7, 9, 20, 33) and len(union.launches) == 8  # as the run's own --kernel-id
    assert [w.wanted[0].id for w in windows.values()] == [28, 147, 238, 122, 70]  # as its manifest says


def test_by_symbol_every_split_of_the_real_shared_run_verifies() -> None:
    trace, functions, union, windows = randn_union("mangled")
    names = {launch.symbol: functions[launch.id] for launch in trace}
    profiled = listing("randn_decode", "union-2", "mangled")
    assert all(verify_against_trace(profiled, union, w, names) is None for w in windows.values())


def test_by_demangled_text_the_same_launches_do_not_match() -> None:
    """What verification saw before it compared symbols: ncu renamed the dropout kernel one way in the
    trace's listing and another in the union's (with renaming off, both are the same text)."""
    trace, functions, union, windows = randn_union("demangled")
    names = {launch.symbol: functions[launch.id] for launch in trace}
    profiled = listing("randn_decode", "union-2", "demangled")
    refusal = verify_against_trace(profiled, union, windows["dropout"], names)
    assert refusal is not None and "fused_dropout_kernel_vec" in refusal.reason
    text = {launch.id: launch.symbol for launch in trace}
    assert "detail::TensorInfo" in text[122] and "detail::TensorInfo" not in profiled[2].symbol
    plain_trace = {x.id: x.symbol for x in listing("randn_decode", "trace", "demangled-renames-off")}
    plain_union = listing("randn_decode", "union-2", "demangled-renames-off")
    assert plain_union[2].symbol == plain_trace[122]


def test_a_one_result_report_is_renamed_shorter_still() -> None:
    """ncu's renaming depends on the other kernels a report holds: the split of one launch."""
    split = listing("randn_decode", "split-elementwise_40", "demangled")[0].symbol
    symbol = listing("randn_decode", "split-elementwise_40", "mangled")[0].symbol
    trace = {
        x.symbol: y.symbol
        for x, y in zip(
            listing("randn_decode", "trace", "mangled"), listing("randn_decode", "trace", "demangled"), strict=True
        )
    }
    assert split.startswith("void vectorized_elementwise_kernel<8, AUnaryFunctor<BFloat16")
    assert trace[symbol].startswith("void at::vectorized_elementwise_kernel<8, at::AUnaryFunctor<c10::BFloat16")


@pytest.mark.parametrize(
    ("listed", "stack"),
    [
        ("moe_train-reduce-sum", "CCCL:cub::DeviceReduce::Sum"),
        ("llama_serve-inclusive-scan", "CCCL:cub::DeviceScan::InclusiveScan"),
    ],
)
def test_cubs_ranges_read_whole_where_their_message_repeats_the_name(listed: str, stack: str) -> None:
    """CCCL's ranges end in a registered message holding colons of its own (tests/fixtures/zoo/README.md): read
    as 'domain:range' only, as Nsight Systems names them, whatever the message adds after them."""
    launches = listing("cccl", listed, "function")
    assert len(launches) == 3 and all(launch.nvtx == (stack,) for launch in launches)


# --- streams: a second thread's launches interleaved otherwise than in the trace ------------------------


def nvjet(launch: Launch, function: str) -> bool:
    return re.search(r"(gemm|nvjet|cutlass|sm90)", function) is not None


def scan(launch: Launch, function: str) -> bool:
    return "scan" in function


def test_another_interleaving_of_two_threads_splits_per_function_and_never_wrong() -> None:
    trace, functions = listing("streams", "trace", "mangled"), functions_of("streams")
    names = {launch.symbol: functions[launch.id] for launch in trace}
    members = {
        "gemm_11": (lambda x, f: nvjet(x, f) and "main_step" in stack(x), nvjet, 11),
        "scan_6": (lambda x, f: scan(x, f) and "side_step" in stack(x), scan, 6),
        "both_9": (lambda x, f: nvjet(x, f) or scan(x, f), lambda x, f: nvjet(x, f) or scan(x, f), 9),
    }
    selected = [launch for launch in trace if nvjet(launch, functions[launch.id]) or scan(launch, functions[launch.id])]
    wanted = [([x for x in trace if s(x, functions[x.id])][skip],) for s, _, skip in members.values()]
    union = picked_window(selected, wanted, functions)
    assert union is not None and union.invocations == (2, 7, 12)
    windows = {name: window(trace, functions, s, k, skip, union) for name, (s, k, skip) in members.items()}
    # The trace ran the second thread first; the shared run lets the main thread's first GEMM go first
    side = [x for x in union.launches if "side_step" in stack(x)]
    main = [x for x in union.launches if "side_step" not in stack(x)]
    profiled = [main[0], *side, *main[1:]]
    assert profiled != list(union.launches)
    assert verify_against_trace(profiled, union, windows["gemm_11"], names) is None
    assert verify_against_trace(profiled, union, windows["scan_6"], names) is None
    refusal = verify_against_trace(profiled, union, windows["both_9"], names)
    assert refusal is not None and "of the kernels it selects" in refusal.reason
    # ...where its split would have held a scan, not the GEMM it wants
    both = windows["both_9"]
    counted = [x for x in profiled if names[x.symbol] in both.selectable]
    assert counted[both.skip_in_union].symbol != both.wanted[0].symbol
    # Compared launch by launch, as before ncu's numbering was used, the correct splits are refused too
    contiguous = UnionWindow(0, union.launches, union.first_id)
    assert verify_against_trace(profiled, contiguous, windows["gemm_11"], names) is not None


# --- the same real sequence, replayed by the fake ncu: a refused split costs one more run -------------

REPLAYED = """
- name: dec_rms_{launch_skip}
  nvtx_include: decode_step/
  kernel_name: _rms_norm_fwd
  matrix:
    launch_skip: [0, 17, 30]
- name: gemm_30
  nvtx_include: decode_step/
  kernel_name: regex:(gemm|nvjet|cutlass|sm90)
  launch_skip: 30
- name: dropout
  nvtx_include: mlp/
  kernel_name: regex:dropout
  launch_skip: 6
"""


@pytest.mark.slow
def test_on_the_real_sequence_refused_splits_share_one_more_run(tmp_path: Path, write_campaign) -> None:
    """The second run of the application (the first shared run) launches one more RMSNorm in a decode
    step first, as a warm-up that depends on timing might: the RMSNorms' numbers move, the others'
    do not. The three refused members share one more run; nobody runs alone."""
    trace = ZOO / "randn_decode" / "trace.demangled-renames-off.csv"
    args = [
        "--replay",
        str(trace),
        "--vary-file",
        str(tmp_path / "runs.txt"),
        "--vary-runs",
        "2",
        "--vary-launch",
        "decode_step/_rms_norm_fwd",
    ]
    campaign = write_campaign(REPLAYED, defaults=f"args: {json.dumps(args)}")
    done = run(campaign)
    assert done.returncode == 0, done.stdout + done.stderr
    _, manifest = load_manifest(tmp_path / "runs")
    assert set(obtained(manifest).values()) == {"shared"}
    by = {t["name"]: t["obtained"] for t in manifest["targets"]}
    regrouped = {
        n for n, o in by.items() if o["reason"].endswith(f"regrouped into {manifest['shared_runs'][-1]['name']}")
    }
    assert regrouped == {"dec_rms_0", "dec_rms_17", "dec_rms_30"}
    assert "of _rms_norm_fwd is _rms_norm_fwd grid" in by["dec_rms_17"]["reason"]
    unions = len(manifest["shared_runs"]) - 1  # the first is the trace
    assert (tmp_path / "runs.txt").read_text() == str(1 + unions)  # no run of its own for anyone
