"""A shared group composed whole on the trace (plan/share/group_plan.py): one pure answer,
the union run and every member's window, or why the members run alone."""

from __future__ import annotations

from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.cost import UNCALIBRATED, UNION_TIMEOUT_MARGIN, per_launch_s
from ncucampaign.plan.share.group_plan import MemberTrace, compose_group
from ncucampaign.plan.share.groups import union_for
from ncucampaign.plan.share.launches import Launch
from tests.conftest import invocation

TRACE = [Launch(i, k, (1, 1, 1), (128, 1, 1), ()) for i, k in enumerate(["gemm", "rms", "gemm", "rms", "attn"] * 4)]


def union_of(members: list[MemberTrace]) -> Invocation:
    return union_for([m.member for m in members], "trace")


def trace_of(name: str, kernel: str, skip: int) -> MemberTrace:
    member = invocation(name, kernel_name=kernel, launch_skip=skip or None)
    selected = tuple(launch for launch in TRACE if launch.symbol == kernel)
    return MemberTrace(member, selected, (selected[skip],))


def test_a_group_that_pays_gets_its_union_and_every_members_window() -> None:
    members = [trace_of("rms-1", "rms", 1), trace_of("gemm-2", "gemm", 2)]
    selected = [launch for launch in TRACE if launch.symbol in ("rms", "gemm")]
    plan = compose_group(members, union_of(members), selected, {}, UNCALIBRATED)
    assert plan.why_not == "" and plan.union is not None and plan.window is not None
    assert set(plan.windows) == {"rms-1", "gemm-2"}
    profiled = [launch.id for launch in plan.window.launches]
    for member in members:  # each wanted launch lies in the union's window, where its window says
        (wanted,) = member.wanted
        window = plan.windows[member.member.name]
        assert wanted.id in profiled and window.wanted == member.wanted
        own = [launch for launch in plan.window.launches if launch.symbol == member.member.options.kernel_name]
        assert own[window.skip_in_union] == wanted  # its split's skip, among its own launches in the union
    assert plan.union.options.launch_count == len(plan.window.launches)
    extra = (len(plan.window.launches) - 1) * per_launch_s(plan.union.options)  # beyond a member's own launch
    assert plan.union.timeout == members[0].member.timeout + UNION_TIMEOUT_MARGIN * extra  # time for what it profiles


def test_a_filter_that_misses_a_members_launch_is_refused() -> None:
    members = [trace_of("rms-1", "rms", 1), trace_of("gemm-2", "gemm", 2)]
    only_rms = [launch for launch in TRACE if launch.symbol == "rms"]
    plan = compose_group(members, union_of(members), only_rms, {}, UNCALIBRATED)
    assert plan.union is None and plan.why_not == "the shared filter does not cover every target's launches"


def test_a_window_dearer_than_the_members_own_runs_is_refused() -> None:
    members = [trace_of("rms-0", "rms", 0), trace_of("attn-3", "attn", 3)]
    everything = list(TRACE) * 40  # the same launches again and again: a window of hundreds
    everything = [Launch(i, x.symbol, x.grid, x.block, x.nvtx) for i, x in enumerate(everything)]
    far = [Launch(i, "attn", (1, 1, 1), (128, 1, 1), ()) for i in (len(everything) - 1,)]
    members[1] = MemberTrace(members[1].member, tuple(far), tuple(far))
    plan = compose_group(members, union_of(members), everything, {}, UNCALIBRATED)
    assert plan.union is None and plan.why_not.startswith("sharing would profile ")
    assert plan.why_not.endswith("launches: dearer than own runs")
