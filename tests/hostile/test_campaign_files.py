"""Campaign files: each numbered defect that a campaign file alone could trigger, with the
fix's regression test. Every case ends with exit 2 and file:line, never exit 70, quickly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import campaign_text, fake_env, run_cli

pytestmark = pytest.mark.slow  # runs the CLI end to end

ESC = "\x1b"


def validate(tmp_path: Path, text: str | bytes, *extra: str, command: str = "validate"):
    path = tmp_path / "camp.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return run_cli(command, str(path), *extra, cwd=tmp_path, env=fake_env(), timeout=60)


def assert_refused(done, *needles: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    for needle in needles:
        assert needle in done.stderr, done.stderr


def test_2_matrix_expansion_is_counted_before_it_is_expanded(tmp_path: Path) -> None:
    values = ", ".join(str(n) for n in range(50))
    matrix = "{" + ", ".join(f"{k}: [{values}]" for k in ("launch_skip", "retries", "launch_skip_before_match")) + "}"
    done = validate(tmp_path, campaign_text(f"- name: t\n  matrix: {matrix}\n".replace("retries: [", "retries: [0, ")))
    assert_refused(done, "camp.yaml:", "expands to 12", "the limit is 20,000")


def test_3_billion_laughs_is_refused_without_expanding_it(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    done = validate(tmp_path, campaign_text("- name: t\n") + "\n".join(lines) + "\n")
    assert_refused(done, "more than 200000 values once its YAML aliases are expanded")


def test_3_an_alias_that_contains_itself_is_refused(tmp_path: Path) -> None:
    done = validate(tmp_path, "application:\n  command: &a [python, *a]\ntargets: [{name: a}]\n")
    assert_refused(done, "camp.yaml:2: application.command", "contains itself")


@pytest.mark.parametrize("depth", [41, 990, 20000])
def test_3_deep_nesting_is_refused(tmp_path: Path, depth: int) -> None:
    done = validate(tmp_path, campaign_text("- name: t\n") + "x: " + "[" * depth + "]" * depth + "\n")
    assert_refused(done, "camp.yaml:", "nest")  # ours ("nested deeper than 40 levels"), or libyaml's


def test_3_a_regex_nested_500_deep_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    done = validate(tmp_path, campaign_text("- name: t\n  kernel_name: 'regex:" + "(" * 500 + "a" + ")" * 500 + "'\n"))
    assert done.returncode == 0, done.stderr
    assert "warning NCU014" in done.stderr and "nested too deeply" in done.stderr


@pytest.mark.parametrize("key", ["args", "env", "kernel_name", "cwd"])
def test_8_a_nul_byte_is_refused_where_it_stands(tmp_path: Path, key: str) -> None:
    value = '"a\\0b"'
    if key == "env":
        target, extra = "- name: t\n  env: {X: " + value + "}\n", ""
    elif key == "cwd":
        target, extra = "- name: t\n", f"  cwd: {value}\n"
    else:
        target, extra = f"- name: t\n  {key}: {value}\n", ""
    done = validate(tmp_path, campaign_text(target, application_extra=extra))
    assert_refused(done, "NUL character")
    assert "camp.yaml:" in done.stderr.splitlines()[0].split(" ")[0]


def test_11_an_integer_of_5000_digits_is_refused(tmp_path: Path) -> None:
    done = validate(tmp_path, campaign_text("- name: t\n  launch_count: " + "9" * 5000 + "\n"))
    assert_refused(done, "camp.yaml")


def test_11_a_5_mb_command_string_is_refused_fast(tmp_path: Path) -> None:
    text = campaign_text("- name: t\n  command: 'python " + "a " * 2_500_000 + "'\n")
    done = validate(tmp_path, text)
    assert_refused(done, "the limit is 131072")


def test_12_control_characters_never_reach_the_terminal(tmp_path: Path) -> None:
    # YAML refuses raw control characters, but its double-quoted escapes make them: "\e" is ESC.
    done = validate(tmp_path, campaign_text('- name: t\n  "kernel_nam\\e[31m": x\n'))
    assert_refused(done, "\\x1b[31m")
    assert ESC not in done.stderr
    planned = validate(tmp_path, campaign_text('- name: t\n  kernel_name: "a\\e[2Jb"\n'), command="plan")
    assert planned.returncode == 0, planned.stderr
    assert ESC not in planned.stdout and "$'a\\x1b[2Jb'" in planned.stdout


@pytest.mark.parametrize(
    ("raw", "line"),
    [(b"application:\n  command: [python]\ntargets:\n  - name: \x07\n", 4), (b"a: 1\nb: \xff\xfe\n", 2)],
    ids=["control-character", "not-utf8"],
)
def test_12_reader_errors_carry_their_line(tmp_path: Path, raw: bytes, line: int) -> None:
    assert_refused(validate(tmp_path, raw), f"camp.yaml:{line}:")


def test_3_a_deeply_nested_manifest_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text('{"manifest_version": 1, "x": ' + "[" * 100000 + "]" * 100000 + "}")
    done = run_cli("summarize", str(run), cwd=tmp_path)
    assert_refused(done, "manifest.json")


@pytest.mark.parametrize(
    "content", [b'{"manifest_version": 1, "run_id": ' + b"9" * 5000 + b"}", b'{"manifest_version": 1, "x": "\xff"}']
)
def test_11_huge_integers_and_non_utf8_in_a_manifest_are_refused(tmp_path: Path, content: bytes) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_bytes(content)
    for command in (("summarize", str(run)), ("report", str(run)), ("compare", str(run), str(run))):
        assert_refused(run_cli(*command, cwd=tmp_path), "manifest.json")


def test_11_a_cache_file_of_the_wrong_shape_is_ignored(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = fake_env(XDG_CACHE_HOME=str(cache))
    campaign = tmp_path / "camp.yaml"
    campaign.write_text(campaign_text("- name: t\n  kernel_name: rmsnorm_kernel\n"))
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=env).returncode == 0
    [cached] = list((cache / "ncucampaign").glob("ncu-*.json"))
    for wrong in ([1, 2], {"sections": 5, "sets": None}, {"version": 3, "sections": [], "sets": []}, "x" * 10):
        cached.write_text(json.dumps(wrong))
        done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr


def test_an_environment_beyond_what_the_system_passes_a_program_fails_validation(tmp_path: Path) -> None:
    """Before the fix: 3 MB of env validated, then `run` failed with 'Argument list too long' (exit 3)."""
    values = "\n".join(f"      BIG_{i}: {'x' * 100_000}" for i in range(30))
    campaign = tmp_path / "camp.yaml"
    campaign.write_text(
        "application:\n  command: python3 app.py\ntargets:\n  - name: t\n    kernel_name: k\n    launch_count: 1\n"
        f"    env:\n{values}\n"
    )
    done = run_cli("validate", str(campaign), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "camp.yaml:7: targets[0].env: t: its command line and environment take" in done.stderr, done.stderr
    assert "more than this system passes to a program" in done.stderr
