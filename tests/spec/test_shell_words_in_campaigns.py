"""Shell words in a campaign: quotes inside an ncu value are an error with the fix, args given as a string
are split as a shell would, and shell syntax in a command no shell runs is an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import campaign_text, cli_in


def plan_json(tmp_path: Path, targets: str, **kwargs: str) -> dict:
    done = cli_in(tmp_path, "plan", "camp.yaml", "--format", "json", text=campaign_text(targets, **kwargs))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow  # runs the CLI end to end
@pytest.mark.parametrize("key", ["nvtx_include", "nvtx_exclude", "python_include", "native_include", "sections"])
@pytest.mark.parametrize("quote", ['"', "'"])
def test_shell_quotes_in_any_ncu_value_are_an_error_with_the_fix(tmp_path: Path, key: str, quote: str) -> None:
    value = f"{quote}decode_step/{quote}"
    yaml_value = f"'{value}'" if quote == '"' else f'"{value}"'
    done = cli_in(tmp_path, "validate", "camp.yaml", text=campaign_text(f"- name: t\n  {key}: {yaml_value}\n"))
    assert done.returncode == 2, done.stdout
    assert f"camp.yaml:13: targets[0].{key}: the quotes are part of the value here" in done.stderr
    assert "write decode_step/" in done.stderr


@pytest.mark.slow  # runs the CLI end to end
def test_args_and_extra_args_given_as_strings_are_split_like_a_shell(tmp_path: Path) -> None:
    plan = plan_json(tmp_path, "- name: t\n  args: --steps 2\n  extra_args: '--print-summary per-kernel'\n")
    argv = plan["invocations"][0]["argv"]
    assert plan["invocations"][0]["app_argv"][-2:] == ["--steps", "2"]
    assert argv[argv.index("--print-summary") + 1] == "per-kernel"


@pytest.mark.slow  # runs the CLI end to end
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("CUDA_VISIBLE_DEVICES=0 python3 b.py", "write env: {CUDA_VISIBLE_DEVICES: '0'}"),
        ("python3 b.py | tee out", "'|' is shell syntax"),
        ("python3 b.py > out.txt", "'>' is shell syntax"),
        ("python3 a.py && python3 b.py", "'&&' is shell syntax"),
    ],
)
def test_shell_syntax_in_a_command_no_shell_runs_is_an_error(tmp_path: Path, command: str, expected: str) -> None:
    text = f"application:\n  command: {json.dumps(command)}\ntargets:\n  - name: t\n"
    done = cli_in(tmp_path, "validate", "camp.yaml", text=text)
    assert done.returncode == 2 and "camp.yaml:2: application.command:" in done.stderr and expected in done.stderr
    shell = f"application:\n  command: {json.dumps(command)}\n  shell: true\ntargets:\n  - name: t\n"
    assert cli_in(tmp_path, "validate", "camp.yaml", text=shell).returncode == 0  # a shell does run it here


@pytest.mark.slow  # runs the CLI end to end
def test_a_regex_alternation_inside_quotes_is_not_shell_syntax(tmp_path: Path) -> None:
    text = "application:\n  command: \"python3 b.py --pick 'a|b'\"\ntargets:\n  - name: t\n"
    done = cli_in(tmp_path, "plan", "camp.yaml", "--format", "json", text=text)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["invocations"][0]["app_argv"] == ["python3", "b.py", "--pick", "a|b"]
