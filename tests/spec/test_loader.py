"""Loading campaign files: accepted forms, and every error located by file, line and key path."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncucampaign.errors import CampaignError, UsageError
from ncucampaign.spec.loader import load_campaign, parse_campaign


def parse(text: str):
    return parse_campaign(text, Path("camp.yaml"))


def problems(text: str) -> list[str]:
    with pytest.raises(CampaignError) as caught:
        parse(text)
    return [f"{p.line}:{p.key_path()}: {p.message}" for p in caught.value.problems]


BASE = "application:\n  command: python3 bench.py\n"


def test_scalars_are_accepted_where_lists_are_expected() -> None:
    loaded = parse(
        BASE + "targets:\n  - name: a\n    sections: SpeedOfLight\n    metrics: 'a__x.sum, b__y.sum'\n"
        "    devices: '0,1'\n    nvtx_include: 'A,B'\n    timeout: 10m\n    env: {X: 3}\n"
    )
    target = loaded.campaign.targets[0]
    assert target.sections == ("SpeedOfLight",)
    assert target.metrics == ("a__x.sum", "b__y.sum")  # stripped: a leading space makes ncu print n/a
    assert target.devices == (0, 1)
    assert target.nvtx_include == ("A,B",)  # a start/end AND expression, never split
    assert target.timeout == 600.0
    assert target.env == {"X": "3"}
    assert loaded.name == "camp"


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        ("    kernel_nme: x\n", "5:targets[0].kernel_nme: unknown key 'kernel_nme'; did you mean 'kernel_name'?"),
        ("    launch_count: 0\n", "5:targets[0].launch_count: must be at least 1"),
        ("    launch_skip: -1\n", "5:targets[0].launch_skip: must be at least 0"),
        ("    timeout: soon\n", "5:targets[0].timeout: 'soon' is not a duration"),
        ("    range_filter: '8'\n", "5:targets[0].range_filter: use ncu's form"),
        (
            "    nvtx_push_pop_scope: global\n",
            "5:targets[0].nvtx_push_pop_scope: must be 'thread' or 'process'",
        ),
        ("    env: {A: yes}\n", "5:targets[0].env.A: YAML read this as a boolean"),
        ('    kernel_name: regex:".*attn.*"\n', "5:targets[0].kernel_name: the quotes are part of the value"),
        ("    kernel_name: 'regex:'\n", "5:targets[0].kernel_name: 'regex:' needs an expression"),
        ("    metrics: ['regex:a,b']\n", "5:targets[0].metrics: 'regex:a,b' contains a comma"),
        ("    target_processes_filter: ['regex:']\n", "5:targets[0].target_processes_filter: 'regex:': nothing after"),
        ("    extra_args: [--launch-count, '2']\n", "5:targets[0].extra_args: '--launch-count' has its own key"),
        ("    extra_args: [-o, x]\n", "5:targets[0].extra_args: '-o' cannot be used: ncucampaign chooses"),
        ("    extra_args: [--print-sumary, per-kernel]\n", "did you mean '--print-summary'?"),
        ("    extra_args: [--print-summary]\n", "'--print-summary' needs a value"),
        ("    extra_args: [bench.py]\n", "is not an ncu option"),
        ("    name: b\n", "5:targets[0].name: duplicate key (first given on line 4)"),
    ],
)
def test_target_errors_are_located(snippet: str, expected: str) -> None:
    found = problems(BASE + "targets:\n  - name: a\n" + snippet)
    assert any(expected in line for line in found), found


def test_extra_args_accept_real_options() -> None:
    loaded = parse(
        BASE + "targets:\n  - name: a\n    extra_args: [--print-summary, per-kernel, --null-stdin, --rule=X]\n"
    )
    assert loaded.campaign.targets[0].extra_args == ("--print-summary", "per-kernel", "--null-stdin", "--rule=X")


def test_all_problems_are_reported_in_file_order() -> None:
    found = problems(
        "application:\n  command: x\n  cwdd: .\ndefaults:\n  retries: -1\ntargets:\n  - name: a\n    lunch_count: 1\n"
    )
    assert [line.split(":")[0] for line in found] == ["3", "5", "8"]
    assert "did you mean 'cwd'?" in found[0]
    assert "did you mean 'launch_count'?" in found[2]


def test_missing_and_empty() -> None:
    assert problems("targets:\n  - name: a\n") == ["1:application: required key is missing"]
    assert "targets: the target list is empty" in problems(BASE + "targets: []\n")[0]
    with pytest.raises(CampaignError, match="the file is empty"):
        parse("")
    with pytest.raises(CampaignError, match="top level must be a mapping"):
        parse("- a\n- b\n")


def test_bad_yaml_names_the_line() -> None:
    with pytest.raises(CampaignError) as caught:
        parse(BASE + "targets:\n  - name: a\n    sections: [x\n")
    assert caught.value.problems[0].line == 6
    assert "invalid YAML" in str(caught.value)


def test_unknown_top_level_key_lists_what_is_allowed() -> None:
    found = problems(BASE + "targets:\n  - name: a\nzzz: 1\n")
    assert "unknown key 'zzz' (allowed:" in found[0]


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such campaign file"):
        load_campaign(tmp_path / "nope.yaml")


def test_error_text_has_file_line_and_summary() -> None:
    with pytest.raises(CampaignError) as caught:
        parse(BASE + "targets:\n  - name: a\n    launch_count: 0\n")
    text = str(caught.value)
    assert text.splitlines()[0].startswith("camp.yaml:5: targets[0].launch_count:")
    assert text.splitlines()[-1] == "camp.yaml: 1 problem"
    assert caught.value.render("; nothing was run.").splitlines()[-1] == "camp.yaml: 1 problem; nothing was run."
    assert caught.value.exit_code == 2


def test_top_level_x_keys_are_the_files_own_home_for_anchors() -> None:
    """Before: `x-common: &rms` was an unknown key, and YAML anchors had no documented home."""
    import jsonschema
    import yaml

    from ncucampaign.spec.schema import campaign_schema

    text = (
        "x-common: &rms\n  kernel_name: rmsnorm_kernel\n  launch_count: 1\n"
        "application:\n  command: python3 app.py\ntargets:\n"
        "  - name: a\n    <<: *rms\n  - name: b\n    <<: *rms\n    launch_skip: 1\n"
    )
    loaded = parse_campaign(text, Path("camp.yaml"))
    assert [t.kernel_name for t in loaded.campaign.targets] == ["rmsnorm_kernel", "rmsnorm_kernel"]
    jsonschema.validate(yaml.safe_load(text), campaign_schema())
    with pytest.raises(CampaignError, match="x-common"):  # only at the top: in a target it is a typo still
        parse_campaign(
            text.replace("    <<: *rms\n    launch_skip", "    x-common: 1\n    launch_skip"), Path("c.yaml")
        )
