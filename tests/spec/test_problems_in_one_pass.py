"""A file with problems gets every one of them once, in one pass, at the line that holds it, in the user's
words (never pydantic's), lint included."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncucampaign.plan.expand import build_plan
from ncucampaign.plan.lint import lint_plan
from ncucampaign.spec.loader import parse_campaign
from ncucampaign.spec.ncu_catalog import InstalledNcu
from tests.conftest import (
    BARE_APP,
    cli_in,
    fake_env,
    run_cli,
)

EIGHT_PROBLEMS = """\
application:
  command: "python3 'unbalanced"
defaults:
  retries: -1
  lint_ignore: [NCU999]
targets:
  - name: a
    launch_count: zero
  - name: a
    nvtx_push_pop_scope: global
  - name: b
    matrix: {lunch_skip: [1, 2]}
  - name: c
    kernel_nme: x
  - name: d
    nvtx_include: '"decode_step/"'
  - name: e
    retry_delay: soon
    env: {X: yes}
"""


INSTALLED = InstalledNcu("2025.3.1.0", frozenset({"SpeedOfLight", "MemoryWorkloadAnalysis"}), frozenset({"full"}))


@pytest.mark.slow  # runs the CLI end to end
def test_a_file_with_many_problems_gets_all_of_them_once_in_one_pass(tmp_path: Path) -> None:
    done = cli_in(tmp_path, "validate", "camp.yaml", text=EIGHT_PROBLEMS)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    problems = [line for line in lines if line.startswith("camp.yaml:")]
    assert done.stdout == "camp.yaml: 11 problems\n", done.stdout  # the verdict
    expected = [
        "2: application.command: cannot split",
        "4: defaults.retries: must be at least 0",
        "5: defaults.lint_ignore[0]: no warning has the code 'NCU999'",
        "8: targets[0].launch_count: expected a whole number",
        "9: targets[1].name: name 'a' is already used by targets[0]",
        "10: targets[1].nvtx_push_pop_scope: must be 'thread' or 'process'",
        "12: targets[2].matrix.lunch_skip: 'lunch_skip' is not a target option; did you mean 'launch_skip'?",
        "14: targets[3].kernel_nme: unknown key 'kernel_nme'; did you mean 'kernel_name'?",
        "16: targets[4].nvtx_include: the quotes are part of the value here",
        "18: targets[5].retry_delay: 'soon' is not a duration",
        "19: targets[5].env.X: YAML read this as a boolean",
    ]
    assert len(problems) == len(expected) == 11, problems
    for line, fragment in zip(problems, expected, strict=True):
        assert f"camp.yaml:{fragment}" in line, (line, fragment)
    assert (
        "Input should" not in done.stderr and "instance of" not in done.stderr and "nothing was run" not in done.stderr
    )


@pytest.mark.slow  # runs the CLI end to end
def test_a_bad_application_command_is_reported_once_for_all_targets(tmp_path: Path) -> None:
    text = 'application:\n  command: "python3 \'x"\ntargets:\n  - name: a\n  - name: b\n'
    done = cli_in(tmp_path, "validate", "camp.yaml", text=text)
    assert done.stderr.count("application.command") == 1 and "camp.yaml: 1 problem\n" in done.stdout


@pytest.mark.slow  # runs the CLI end to end
def test_pydantic_words_never_reach_the_user(tmp_path: Path) -> None:
    text = "application:\n  command: {a: 1}\ntargets:\n  - just a string\n  - name: b\n    sections: {x: 1}\n"
    done = cli_in(tmp_path, "validate", "camp.yaml", text=text)
    assert done.returncode == 2
    assert "Input should" not in done.stderr and "instance of" not in done.stderr, done.stderr
    assert "targets[0]: expected a mapping (key: value)" in done.stderr


@pytest.mark.slow  # runs the CLI end to end
def test_a_tab_says_to_indent_with_spaces(tmp_path: Path) -> None:
    done = cli_in(tmp_path, "validate", "camp.yaml", text="application:\n\tcommand: x\ntargets: [{name: a}]\n")
    assert done.returncode == 2 and "camp.yaml:2:" in done.stderr and "indent with spaces" in done.stderr


@pytest.mark.slow  # runs the CLI end to end
def test_validation_reports_every_problem_of_a_file_in_one_pass(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(
        "application:\n  command: python3 app.py\ndefaults:\n  launch_count: 1\ntargets:\n"
        "  - name: a\n    kernel_name: rmsnorm_kernel\n    kernel_name: other\n"  # a duplicate key
        "  - name: b\n    launch_count: -3\n"  # a model error
        "  - name: c\n    kernel_name: k\n    sections: [SpeedOfLite]\n"  # NCU009: ncu will refuse it
    )
    done = run_cli("validate", "camp.yaml", cwd=tmp_path, env=fake_env())
    assert done.returncode == 2
    assert "camp.yaml:8: targets[0].kernel_name: duplicate key (first given on line 7)" in done.stderr
    assert "camp.yaml:10: targets[1].launch_count: must be at least 1" in done.stderr
    assert "error NCU009 targets[2].sections[0]" in done.stderr and "did you mean 'SpeedOfLight'" in done.stderr
    (tmp_path / "shell.yaml").write_text(
        "application:\n  command: CUDA_VISIBLE_DEVICES=0 python3 app.py | tee out.txt\n"
        "targets:\n  - name: a\n    kernel_name: k\n    launch_count: 1\n"
    )
    shell = run_cli("validate", "shell.yaml", cwd=tmp_path, env=fake_env())
    assert shell.returncode == 2
    assert "'CUDA_VISIBLE_DEVICES=0' is a shell variable assignment" in shell.stderr
    assert "'|' is shell syntax" in shell.stderr  # the second problem of the same command, same pass


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_a_section_typo_is_linted_in_the_same_pass_as_a_key_error_of_its_target(tmp_path: Path) -> None:
    """Lint: NCU009 waited behind the key error until the next round."""
    campaign = tmp_path / "camp.yaml"
    campaign.write_text(BARE_APP + "targets:\n  - name: a\n    kernal_name: k\n    sections: [SpeedOfLigt]\n")
    done = run_cli("validate", str(campaign), cwd=tmp_path, env=fake_env())
    assert done.returncode == 2
    assert "targets[0].kernal_name: unknown key" in done.stderr
    assert "error NCU009 targets[0].sections[0]: section 'SpeedOfLigt'" in done.stderr, done.stderr


def test_a_defaults_typo_is_reported_once_at_the_defaults_line() -> None:
    loaded = parse_campaign(
        BARE_APP + "defaults:\n  sections: [SpeedOfLigt]\ntargets:\n  - name: a\n  - name: b\n  - name: c\n"
        "    sections: [SpeedOfLite]\n",
        Path("camp.yaml"),
    )
    found = [(w.code, w.line, w.path) for w in lint_plan(loaded, build_plan(loaded), INSTALLED)]
    assert found == [("NCU009", 4, ("defaults", "sections", 0)), ("NCU009", 9, ("targets", 2, "sections", 0))]
