"""Picked windows: a union that selects its members' launches by invocation number with
`--kernel-id` instead of every match between the first and the last. Pure rules first, then the CLI
end to end against the fake ncu, which numbers launches as ncu 2025.3.1 did on the H200 (per
function name, among the launches that pass the NVTX filter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncucampaign.plan.share.launches import Launch
from ncucampaign.plan.share.pricing import Placed, profiled_launches
from ncucampaign.plan.share.union import picked, picks_possible
from ncucampaign.plan.share.windows import invocation_numbers, member_window, picked_window, union_window
from ncucampaign.spec.model import TargetOptions
from tests.conftest import invocation, load_manifest
from tests.execute.shared_campaigns import obtained, profiled_launch, run


def launches(*kernels: str) -> list[Launch]:
    return [Launch(i, kernel, (1, 1, 1), (128, 1, 1), ()) for i, kernel in enumerate(kernels)]


# Two functions interleaved: a (IDs 0, 2, 4, 6) and b (IDs 1, 3, 5, 7).
TRACE = launches("a", "b", "a", "b", "a", "b", "a", "b")
FUNCTIONS = {launch.id: launch.symbol for launch in TRACE}


def test_invocations_are_numbered_per_function_in_trace_order() -> None:
    assert invocation_numbers((launch.id for launch in TRACE), FUNCTIONS) == {
        0: 1,
        1: 1,
        2: 2,
        3: 2,
        4: 3,
        5: 3,
        6: 4,
        7: 4,
    }


def test_a_picked_window_holds_every_function_at_the_wanted_numbers_up_to_the_last_wanted() -> None:
    # a's 1st launch and b's 3rd: --kernel-id picks invocations 1 and 3 of both, up to ID 5
    window = picked_window(TRACE, [[TRACE[0]], [TRACE[5]]], FUNCTIONS)
    assert window is not None
    assert [launch.id for launch in window.launches] == [0, 1, 4, 5]
    assert window.invocations == (1, 3) and window.skip == 0
    contiguous = union_window(TRACE, [[TRACE[0]], [TRACE[5]]])
    assert len(contiguous.launches) == 6  # what it saves: IDs 2 and 3


def test_a_picked_window_names_only_the_wanted_launches_functions() -> None:
    # c matches the union's filter but no member wants it: --kernel-id names a and b, so c's launches
    # at the wanted numbers are not profiled (on the H200, shared.yaml's nvjet regex matched 4 cuBLAS
    # functions where 3 were wanted).
    trace = launches("a", "c", "b", "c", "a", "b")
    functions = {launch.id: launch.symbol for launch in trace}
    window = picked_window(trace, [[trace[0]], [trace[5]]], functions)  # a's 1st and b's 2nd
    assert window is not None and window.functions == ("a", "b") and window.invocations == (1, 2)
    assert [launch.id for launch in window.launches] == [0, 2, 4, 5]  # not c's 1st (ID 1) nor 2nd (ID 3)
    union = picked(invocation("u", kernel_name="regex:a|b|c"), window.invocations, 4, window.functions)
    assert union.options.kernel_id == "::regex:^(a|b)$:1|2"
    assert profiled_launches([Placed(invocation("m"), (0, 1, 2, 3, 4, 5), (0, 5))], functions) == 4


def test_a_function_name_with_a_colon_leaves_the_unions_own_filter_in_kernel_id() -> None:
    trace = launches("ns::a", "c", "c", "ns::a")
    functions = {launch.id: launch.symbol for launch in trace}
    window = picked_window(trace, [[trace[3]]], functions)  # ns::a's 2nd
    assert window is not None and window.functions == ()  # not writable in --kernel-id's grammar
    assert [launch.id for launch in window.launches] == [2, 3]  # so c's 2nd is profiled too


def test_without_every_function_name_there_is_no_picked_window() -> None:
    assert picked_window(TRACE, [[TRACE[0]]], {0: "a"}) is None


def test_a_members_skip_in_a_picked_union_counts_only_its_launches_the_union_profiled() -> None:
    window = picked_window(TRACE, [[TRACE[0]], [TRACE[6]]], FUNCTIONS)  # invocations 1 and 4: IDs 0, 1, 6, 7
    assert window is not None
    member_a = [TRACE[i] for i in (0, 2, 4, 6)]  # a member on `a` that wants its 4th launch
    assert member_window(member_a, 3, (TRACE[6],), window).skip_in_union == 1  # only ID 0 was profiled before


def test_partition_prices_a_group_at_its_picked_launches_when_fewer() -> None:
    inv = invocation("m")
    early = Placed(inv, (0, 2, 4, 6), (0,))
    late = Placed(invocation("n"), (1, 3, 5, 7), (7,))
    assert profiled_launches([early, late]) == 8  # the whole window
    assert profiled_launches([early, late], FUNCTIONS) == 4  # a and b at invocations 1 and 4


@pytest.mark.parametrize(
    ("options", "possible"),
    [
        ({"kernel_name": "regex:nvjet"}, True),
        ({}, True),
        ({"kernel_name_base": "demangled"}, False),
        ({"python_include": ("f",), "call_stack_type": ("python",)}, False),
        ({"kernel_name": "regex:at::foo"}, False),  # a ':' would break the --kernel-id grammar
    ],
)
def test_picks_only_where_ncus_numbering_was_measured(options: dict[str, object], possible: bool) -> None:
    assert picks_possible(TargetOptions.model_construct(**options)) is possible


def test_the_union_moves_its_kernel_filter_into_kernel_id() -> None:
    union = picked(invocation("u", kernel_name="regex:(nvjet)|^rms$", launch_skip=4), (1, 7, 12), 5)
    assert union.options.kernel_name is None and union.options.launch_skip is None
    assert union.options.kernel_id == "::regex:(nvjet)|^rms$:1|7|12" and union.options.launch_count == 5
    assert picked(invocation("v", kernel_name="rms"), (2,), 1).options.kernel_id == "::rms:2"
    assert picked(invocation("w"), (2,), 1).options.kernel_id == ":::2"


# Two instances of one templated function a layer (fake_app.py --templated): ncu numbers them together.
SPREAD = """
- name: elementwise
  kernel_name: vectorized_elementwise_kernel
  matrix:
    launch_skip: [1, 30]
- name: rms
  kernel_name: rmsnorm_kernel
  nvtx_include: decode_step/
  matrix:
    launch_skip: [0, 37]
- name: attention_elementwise
  kernel_name: vectorized_elementwise_kernel
  nvtx_include: "attention]"
  launch_skip: 20
"""


@pytest.mark.versions
@pytest.mark.slow
def test_a_picked_union_splits_into_the_launches_runs_of_their_own_profile(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(SPREAD, defaults="args: [--templated]")
    done = run(campaign)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    assert set(obtained(manifest).values()) == {"shared"}, json.dumps(manifest["targets"], indent=1)[:3000]
    unions = [r for r in manifest["shared_runs"] if not r["name"].startswith("shared/trace-")]
    assert any("--kernel-id" in r["argv"] for r in unions)
    profiled = sum(int(r["argv"][r["argv"].index("--launch-count") + 1]) for r in unions)
    assert profiled < 20  # the contiguous windows would profile far more (the wanted launches span the run)
    separate = tmp_path / "separate"
    separate.mkdir()
    (separate / "camp.yaml").write_text(campaign.read_text())
    assert run(separate / "camp.yaml", "--no-share").returncode == 0
    alone_dir, _ = load_manifest(separate / "runs")
    for name in obtained(manifest):  # each split holds the launch its own run profiles
        assert profiled_launch(run_dir, name) == profiled_launch(alone_dir, name), name
