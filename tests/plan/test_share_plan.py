"""Which targets share an application run, with which window, and what the union profiles (pure)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from ncucampaign.plan.expand import Invocation, build_plan
from ncucampaign.plan.share.groups import SharePlan, share_plan
from ncucampaign.plan.share.union import collection_words, filter_words, union_kernel_name, union_options
from ncucampaign.plan.share.windows import targets_windows
from ncucampaign.spec.loader import parse_campaign

FOUR = "\n".join(f"- name: t{i}\n  kernel_name: rmsnorm_kernel\n  launch_skip: {i}" for i in range(4))


def planned(targets: str, defaults: str = "", share: bool = True) -> tuple[list[Invocation], SharePlan]:
    text = (
        "application:\n  command: python3 app.py\ndefaults:\n  sections: [SpeedOfLight]\n  launch_count: 1\n"
        + textwrap.indent(textwrap.dedent(defaults), "  ")
        + "\ntargets:\n"
        + textwrap.indent(textwrap.dedent(targets).strip(), "  ")
        + "\n"
    )
    plan = build_plan(parse_campaign(text, Path("/work/camp.yaml")))
    return list(plan.invocations), share_plan(plan.invocations, share)


def grouped(shares: SharePlan) -> list[list[str]]:
    return [[m.name for m in group.members] for group in shares.groups]


def alone(shares: SharePlan) -> dict[str, str]:
    return {inv.name: why for inv, why in shares.alone}


def test_a_matrix_over_launch_skip_shares_one_run_with_its_window_from_the_targets() -> None:
    _, shares = planned(FOUR)
    assert grouped(shares) == [["t0", "t1", "t2", "t3"]]
    group = shares.groups[0]
    assert group.window == "targets"
    assert (group.union.options.launch_skip, group.union.options.launch_count) == (None, 4)
    assert [w.skip_in_union for w in targets_windows(group.members).values()] == [0, 1, 2, 3]


def test_the_targets_window_starts_at_the_smallest_skip() -> None:
    targets = "\n".join(f"- name: t{i}\n  kernel_name: k\n  launch_skip: {i}" for i in (5, 7, 9))
    group = planned(targets)[1].groups[0]
    assert (group.union.options.launch_skip, group.union.options.launch_count) == (5, 5)
    assert [w.skip_in_union for w in targets_windows(group.members).values()] == [0, 2, 4]


def test_different_kernel_filters_share_a_run_whose_window_comes_from_the_trace() -> None:
    targets = """
    - name: rms
      kernel_name: rmsnorm_kernel
    - name: gemm
      kernel_name: regex:nvjet
    - name: attention
      kernel_name: regex:.*(flash|sdpa).*
    - name: mlp_rms
      nvtx_include: "mlp]"
      kernel_name: rmsnorm_kernel
    """
    _, shares = planned(targets)
    assert grouped(shares) == [["rms", "gemm", "attention", "mlp_rms"]]
    group = shares.groups[0]
    assert group.window == "trace"
    assert group.union.options.kernel_name == r"regex:^rmsnorm_kernel$|(nvjet)|(.*(flash|sdpa).*)"
    assert group.union.options.nvtx_include is None  # not every member has one: the union cannot filter on it
    assert group.union.options.nvtx is True  # the trace and the union record NVTX stacks for verification


# One differing value per setting that must keep a target out of the others' run.
KEY_CHANGES = {
    "nvtx_push_pop_scope": "nvtx_push_pop_scope: process",
    "range_filter": "range_filter: '::2'",
    "profile_from_start": "profile_from_start: false",
    "disable_profiler_start_stop": "disable_profiler_start_stop: true",
    "kernel_name_base": "kernel_name_base: demangled",
    "target_processes": "target_processes: application-only",
    "target_processes_filter": "target_processes_filter: [python3]",
    "devices": "devices: [0]",
    "graph_profiling": "graph_profiling: node",
    "replay_mode": "replay_mode: kernel",
    "app_replay_mode": "app_replay_mode: strict",
    "app_replay_match": "app_replay_match: all",
    "cache_control": "cache_control: none",
    "clock_control": "clock_control: boost",  # unset is pinned to base
    "page": "page: raw",
    "call_stack_type": "call_stack_type: [native]",
    "python_include": "python_include: [app.py@step]",
    "python_exclude": "python_exclude: [app.py@warmup]",
    "native_include": "native_include: [main]",
    "native_exclude": "native_exclude: [init]",
    "set outside basic < detailed < full": "set: nvlink",
    "args": "args: [--steps, '3']",
    "command": "command: python3 other.py",
    "env": "env: {A: '1'}",
    "timeout": "timeout: 99",
    "retries": "retries: 3",
    "retry_delay": "retry_delay: 1",
    "stop_grace": "stop_grace: 5",
}


@pytest.mark.parametrize("field", list(KEY_CHANGES))
def test_a_differing_run_setting_keeps_a_target_out_of_the_shared_run(field: str) -> None:
    targets = FOUR.replace("launch_skip: 0", f"launch_skip: 0\n  {KEY_CHANGES[field]}")
    _, shares = planned(targets)
    assert grouped(shares) == [["t1", "t2", "t3"]], field
    assert alone(shares) == {"t0": "no other target has the same run settings"}


@pytest.mark.parametrize(
    ("setting", "reason"),
    [
        ("share: 'off'", "share: off"),
        ("kernel_id: '::k:1'", "kernel_id cannot be re-applied on import"),
        ("extra_args: [--print-summary, none]", "extra_args may change how the application runs"),
        (
            "launch_skip_before_match: 3",
            "launch_skip_before_match counts the launches of every kernel, which a shared run does not see",
        ),
        ("filter_mode: per-gpu", "filter_mode per-gpu counts launches per group"),
        ("replay_mode: range", "replay_mode range profiles ranges, not launches"),
        ("graph_profiling: graph", "graph_profiling graph profiles whole graphs"),
    ],
)
def test_what_never_shares_says_why(setting: str, reason: str) -> None:
    targets = FOUR.replace("launch_skip: 0", f"launch_skip: 0\n  {setting}")
    assert alone(planned(targets)[1])["t0"] == reason


def test_without_a_launch_count_a_target_runs_alone() -> None:
    _, shares = planned(FOUR.replace("launch_skip: 0", "launch_skip: 0\n  launch_count: null"))
    assert alone(shares)["t0"].startswith("no launch_count")


def test_range_filtered_targets_share_only_with_identical_filters() -> None:
    targets = """
    - name: a
      kernel_name: rmsnorm_kernel
      range_filter: '::2'
      matrix: {launch_skip: [0, 1]}
    - name: b
      kernel_name: regex:nvjet
      range_filter: '::2'
      matrix: {launch_skip: [0, 1]}
    """
    _, shares = planned(targets)  # a trace cannot place launches under a range filter
    assert grouped(shares) == [["a-0", "a-1"], ["b-0", "b-1"]]
    assert {group.window for group in shares.groups} == {"targets"}


def test_the_cost_rule_keeps_a_full_set_target_out_of_a_wide_speed_of_light_run() -> None:
    targets = "\n".join(f"- name: t{i}\n  kernel_name: k\n  launch_skip: {i * 10}" for i in range(4))
    targets += "\n- name: full\n  kernel_name: k\n  launch_skip: 5\n  set: full"
    _, shares = planned(targets)
    assert grouped(shares) == [["t0", "t1", "t2", "t3"]]
    assert alone(shares) == {"full": "sharing would cost more than its own run"}


def test_the_cost_rule_lets_a_full_set_target_share_when_it_profiles_the_same_launches() -> None:
    targets = (
        "- name: sol\n  kernel_name: k\n  launch_skip: 3\n- name: full\n  kernel_name: k\n  launch_skip: 3\n  set: full"
    )
    group = planned(targets)[1].groups[0]
    assert [m.name for m in group.members] == ["sol", "full"]
    assert (group.union.options.section_set, group.union.options.sections) == ("full", ("SpeedOfLight",))
    assert collection_words(group.union.options) == ["set:full", "SpeedOfLight"]


def test_a_trace_pays_only_for_enough_targets() -> None:
    two = "- name: a\n  kernel_name: x\n- name: b\n  kernel_name: y"
    _, shares = planned(two)  # two starts are cheaper than a trace and a shared run
    assert not shares.groups and set(alone(shares)) == {"a", "b"}


def test_no_share_runs_everything_alone() -> None:
    _, shares = planned(FOUR, share=False)
    assert not shares.groups and len(alone(shares)) == 4


def test_union_filters_are_a_superset_of_every_member() -> None:
    invocations, _ = planned(
        """
        - name: a
          kernel_name: 'x.y'
          nvtx_include: [step/]
          nvtx_exclude: [warmup/, init/]
        - name: b
          kernel_name: regex:^z
          nvtx_include: [layer/]
          nvtx_exclude: [init/]
        """
    )
    options = union_options(invocations, with_nvtx=False)
    assert union_kernel_name(invocations) == r"regex:^x\.y$|(^z)"
    assert options.nvtx_include == ("step/", "layer/")
    assert options.nvtx_exclude == ("init/",)  # only what both exclude
    assert filter_words(invocations[0].options) == [
        "--nvtx-include",
        "step/",
        "--nvtx-exclude",
        "warmup/",
        "--nvtx-exclude",
        "init/",
        "--kernel-name",
        "x.y",
    ]


@pytest.mark.slow
def test_plan_json_lists_the_shared_runs_with_their_commands(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    campaign = tmp_path / "camp.yaml"
    campaign.write_text(
        "application:\n  command: python3 app.py\ndefaults:\n  launch_count: 1\ntargets:\n"
        + textwrap.indent(FOUR, "  ")
        + "\n"
    )
    done = run_cli("plan", str(campaign), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shared = json.loads(done.stdout)["shared_runs"]
    assert [s["members"] for s in shared] == [["t0", "t1", "t2", "t3"]]
    assert "--launch-count 4" in shared[0]["union"]
    assert "--import" in shared[0]["splits"]["t2"] and "--launch-skip 2" in shared[0]["splits"]["t2"]


def test_the_running_cost_tally_agrees_with_the_cost_of_the_members() -> None:
    from ncucampaign.plan.share.cost import group_s
    from ncucampaign.plan.share.groups import _Tally

    invocations, _ = planned(
        """
        - name: a
          kernel_name: x
          launch_skip: 4
        - name: b
          kernel_name: y
          set: full
          launch_count: 3
        - name: c
          kernel_name: z
          metrics: [dram__bytes.sum]
          sections: [Occupancy, LaunchStats]
          launch_skip: 1
        - name: d
          kernel_name: w
          set: basic
        """
    )
    for window in ("targets", "trace"):
        tally = _Tally(window, invocations[0])
        for count, inv in enumerate(invocations[1:], 2):
            assert tally.seconds(inv) == pytest.approx(group_s(invocations[:count], window))
            tally.add(inv)
            assert tally.seconds() == pytest.approx(group_s(invocations[:count], window))


def test_a_pool_that_reaches_far_gets_a_trace_that_reaches_its_members() -> None:
    """Before: every trace stopped at 2,000 launches, and in a pool of 10,000 targets reaching the 5,000th launch of
    two kernels the members beyond it each ran alone."""
    from ncucampaign.plan.share.union import TRACE_LAUNCHES, TRACE_REACH, trace_launches
    from tests.conftest import invocation

    near = [invocation(f"r{i}", kernel_name="rms", launch_skip=i, launch_count=1) for i in range(10)]
    assert trace_launches(near) == TRACE_LAUNCHES
    far = [
        invocation(f"{k}{i}", kernel_name=k, launch_skip=i, launch_count=1)
        for k in ("rms", "gemm")
        for i in range(5000)
    ]
    assert trace_launches(far) == TRACE_REACH * (5000 + 5000)


def test_a_matrix_over_launch_skip_shares_in_unions_of_at_most_union_launches_each_given_the_time_it_needs() -> None:
    """A 600-launch window from the targets was one union: a 600-result report to read whole, lost whole if it failed,
    and 240 s of SpeedOfLight replay under a target's 60 s timeout."""
    from ncucampaign.plan.share.cost import UNION_LAUNCHES, UNION_TIMEOUT_MARGIN

    matrix = "- name: t{launch_skip}\n  kernel_name: k\n  matrix:\n    launch_skip: " + str(list(range(600)))
    _, shares = planned(matrix, "timeout: 60")
    assert len(shares.groups) >= 600 // UNION_LAUNCHES + 1 and not alone(shares)
    for group in shares.groups:
        count = group.union.options.launch_count
        assert count <= UNION_LAUNCHES
        assert group.union.timeout == pytest.approx(60 + UNION_TIMEOUT_MARGIN * (count - 1) * 0.4)


def test_plan_counts_shared_groups_in_validates_words_and_numbers_alone_targets_apart(tmp_path: Path) -> None:
    """Round 7, item 11: validate said '5 at the fewest' where plan said '1 shared group', and plan numbered
    '[1/14]' under '21 ncu invocations'."""
    from tests.conftest import campaign_text, run_cli

    targets = "".join(f"- name: rms_{i}\n  kernel_name: rmsnorm_kernel\n  launch_skip: {i}\n" for i in range(2))
    targets += "- name: gemm\n  kernel_name: regex:nvjet\n- name: own\n  kernel_name: rmsnorm_kernel\n  share: 'off'\n"
    (tmp_path / "camp.yaml").write_text(campaign_text(targets))
    done = run_cli("plan", "camp.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith(": 4 ncu invocations (1 alone, 3 shared)"), lines[0]
    assert "# [1/1 alone] own" in lines
    assert any(
        "3 targets shared: 1 trace pool (a discovery trace, then at least 1 union): 2 application starts at the fewest"
        in line
        for line in lines
    ), lines
