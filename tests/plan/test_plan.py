"""Planning: inheritance, matrix expansion and names, implied options, commands and quoting."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from ncucampaign.errors import CampaignError
from ncucampaign.plan.argv import escape_macros, ncu_argv, shell_command
from ncucampaign.plan.expand import Plan, build_plan
from ncucampaign.plan.matrix import slug
from ncucampaign.spec.loader import parse_campaign


def plan_of(text: str, path: str = "/work/c/camp.yaml") -> Plan:
    return build_plan(parse_campaign(text, Path(path)))


def argv_of(plan: Plan, name: str) -> list[str]:
    inv = next(i for i in plan.invocations if i.name == name)
    return ncu_argv(inv, "ncu", Path("/r"), ".ncu-rep")


APP = "application:\n  command: python3 bench.py\n"


def test_targets_inherit_and_override_defaults() -> None:
    plan = plan_of(
        APP + "defaults:\n  set: full\n  launch_count: 1\n  env: {A: '1', B: '2'}\n  timeout: 60\n"
        "targets:\n  - name: a\n  - name: b\n    set: basic\n    launch_count: 5\n    env: {B: x}\n    retries: 4\n"
    )
    a, b = plan.invocations
    assert argv_of(plan, "a")[1:7] == ["--set", "full", "--launch-count", "1", "--kill", "yes"]
    assert argv_of(plan, "b")[1:7] == ["--set", "basic", "--launch-count", "5", "--kill", "yes"]
    assert dict(a.env) == {"A": "1", "B": "2"} and dict(b.env) == {"A": "1", "B": "x"}
    assert (a.timeout, b.timeout) == (60.0, 60.0)
    assert (a.retries, b.retries) == (1, 4)


def test_an_empty_list_clears_an_inherited_one() -> None:
    plan = plan_of(APP + "defaults:\n  sections: [A, B]\ntargets:\n  - name: a\n    sections: []\n    set: full\n")
    assert "--section" not in argv_of(plan, "a")


def test_implied_options() -> None:
    plan = plan_of(
        APP + "targets:\n"
        "  - name: nvtx\n    nvtx_include: [A/, B/]\n    nvtx_exclude: C]\n"
        "  - name: stacks\n    python_include: f.py@g\n    native_exclude: h\n"
        "  - name: nokill\n    launch_count: 2\n    kill: false\n"
        "  - name: count\n    launch_count: 2\n"
    )
    nvtx = argv_of(plan, "nvtx")
    assert nvtx[1:8] == ["--nvtx", "--nvtx-include", "A/", "--nvtx-include", "B/", "--nvtx-exclude", "C]"]
    assert nvtx[8:10] == ["--clock-control", "base"]  # pinned: ncu 2026.1 changed its default
    assert nvtx[10:16] == ["--config-file", "off", "--rename-kernels", "off", "-f", "-o"]  # no stray file read
    stacks = argv_of(plan, "stacks")
    assert stacks[1:5] == ["--call-stack-type", "python", "--call-stack-type", "native"]
    assert "--kill" not in argv_of(plan, "nokill")
    assert argv_of(plan, "count")[1:5] == ["--launch-count", "2", "--kill", "yes"]


def test_nvtx_false_with_an_include_is_an_error() -> None:
    with pytest.raises(CampaignError, match="need --nvtx"):
        plan_of(APP + "targets:\n  - name: a\n    nvtx: false\n    nvtx_include: A/\n")


def test_matrix_expands_with_predictable_names() -> None:
    plan = plan_of(
        APP + "targets:\n"
        "  - name: attn\n    nvtx_include: step/\n    matrix:\n      range_filter: ['::4', '::(4|8)']\n      set: [basic, full]\n"
        "  - name: s{range_filter}_{set}\n    nvtx_include: step/\n    matrix:\n      range_filter: ['::16']\n      set: [full]\n"
    )
    assert plan.names() == ["attn-4-basic", "attn-4-full", "attn-4_8-basic", "attn-4_8-full", "s16_full"]
    assert argv_of(plan, "attn-4_8-full")[argv_of(plan, "attn-4_8-full").index("--range-filter") + 1] == "::(4|8)"
    assert dict(plan.invocations[0].matrix) == {"range_filter": "::4", "set": "basic"}


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            "  - name: a\n    matrix: {lunch_count: [1, 2]}\n",
            "'lunch_count' is not a target option; did you mean 'launch_count'?",
        ),
        (
            "  - name: a\n    launch_count: 1\n    matrix: {launch_count: [1, 2]}\n",
            "set both in the target and in its matrix",
        ),
        (
            "  - name: a\n    matrix: {launch_count: [1, 0]}\n",
            "targets[0].matrix.launch_count[1]: must be at least 1",
        ),
        ("  - name: a{set}\n", "placeholder {set} is not a key"),
        ("  - name: a\n    matrix: {set: [x, 'x!']}\n", "name 'a-x' is already used by an earlier expansion"),
        ("  - name: a-x\n  - name: a\n    matrix: {set: [x]}\n", "name 'a-x' is already used by targets[0]"),
    ],
)
def test_expansion_problems_are_located(target: str, expected: str) -> None:
    with pytest.raises(CampaignError) as caught:
        plan_of(APP + "targets:\n" + target)
    assert expected in str(caught.value)
    assert caught.value.problems[0].line is not None


def test_slug() -> None:
    assert [slug(v) for v in ("::8", "::(4|8)", "yes:2:3", True, ["A", "B"], "../x")] == [
        "8",
        "4_8",
        "yes_2_3",
        "on",
        "A_B",
        "x",
    ]


def test_command_forms_and_cwd() -> None:
    plan = plan_of(
        "application:\n  command: python3 bench.py --name 'a b'\n  cwd: ../work\n  env: {A: '1'}\n"
        "targets:\n  - name: a\n    args: [--step, '3']\n  - name: b\n    command: [torchrun, --nproc_per_node=1, x.py]\n",
        "/home/u/proj/campaigns/c.yaml",
    )
    a, b = plan.invocations
    assert a.app_argv == ("python3", "bench.py", "--name", "a b", "--step", "3")
    assert b.app_argv == ("torchrun", "--nproc_per_node=1", "x.py")
    assert a.cwd == Path("/home/u/proj/work")


def test_shell_is_only_used_when_asked() -> None:
    plan = plan_of("application:\n  command: 'cd x && python3 a.py | tee log'\n  shell: true\ntargets:\n  - name: a\n")
    assert plan.invocations[0].app_argv == ("/bin/sh", "-c", "cd x && python3 a.py | tee log")


def test_unbalanced_quotes_are_a_campaign_error() -> None:
    with pytest.raises(CampaignError, match=r"application\.command: cannot split the command"):
        plan_of("application:\n  command: python3 'bench.py\ntargets:\n  - name: a\n")


def test_shell_command_round_trips_through_a_shell() -> None:
    plan = plan_of(APP + "targets:\n  - name: a\n    kernel_name: 'regex:.*(flash|fmha).*'\n    env: {X: 'a b'}\n")
    inv = plan.invocations[0]
    argv = ncu_argv(inv, "ncu", Path("/r/dir with space"), ".ncu-rep")
    line = shell_command(argv, inv.env, inv.cwd)
    assert line.startswith("cd /work/c && X='a b' ncu ")
    assert shlex.split(line)[4:] == argv


def test_report_path_escapes_ncu_macros() -> None:
    assert escape_macros("/runs/100%/x") == "/runs/100%%/x"


def test_select() -> None:
    plan = plan_of(APP + "targets:\n  - name: a\n    matrix: {set: [x, y]}\n  - name: b\n")
    assert plan.select(["a"]).names() == ["a-x", "a-y"]
    assert plan.select(["a-y", "b"]).names() == ["a-y", "b"]
    with pytest.raises(KeyError):
        plan.select(["c"])


def test_expected_results_follow_the_launch_count() -> None:
    plan = plan_of(
        APP + "targets:\n  - name: a\n    launch_count: 4\n  - name: b\n    launch_count: 4\n    filter_mode: per-gpu\n"
        "  - name: c\n"
    )
    assert [inv.expected_results for inv in plan.invocations] == [4, None, None]
