"""Natural mistakes give a clear problem (never a silently wrong ncu command), validation
reports everything in one pass, the CI gate of `compare` is honest, and output goes where one rule
says. One test per numbered item of the issue."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ncucampaign.execute.attempt.classify import parse_console
from ncucampaign.execute.attempt.diagnose import diagnose
from ncucampaign.execute.rundir.status import Status
from ncucampaign.results.metrics import DURATION
from ncucampaign.spec.model import TargetOptions
from tests.conftest import FIXTURES, REPORT, campaign_text, fake_env, load_manifest, run_cli, target
from tests.manifests import manifest_with, target_record

pytestmark = pytest.mark.slow  # runs the CLI end to end


def cli(tmp_path: Path, *args: str, text: str | None = None, cwd: Path | None = None):
    if text is not None:
        (tmp_path / "camp.yaml").write_text(text)
    return run_cli(*args, cwd=cwd or tmp_path, env=fake_env())


def plan_json(tmp_path: Path, targets: str, **kwargs: str) -> dict:
    done = cli(tmp_path, "plan", "camp.yaml", "--format", "json", text=campaign_text(targets, **kwargs))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("key", ["nvtx_include", "nvtx_exclude", "python_include", "native_include", "sections"])
@pytest.mark.parametrize("quote", ['"', "'"])
def test_1_shell_quotes_in_any_ncu_value_are_an_error_with_the_fix(tmp_path: Path, key: str, quote: str) -> None:
    value = f"{quote}decode_step/{quote}"
    yaml_value = f"'{value}'" if quote == '"' else f'"{value}"'
    done = cli(tmp_path, "validate", "camp.yaml", text=campaign_text(f"- name: t\n  {key}: {yaml_value}\n"))
    assert done.returncode == 2, done.stdout
    assert f"camp.yaml:13: targets[0].{key}: the quotes are part of the value here" in done.stderr
    assert "write decode_step/" in done.stderr


def test_2_args_and_extra_args_given_as_strings_are_split_like_a_shell(tmp_path: Path) -> None:
    plan = plan_json(tmp_path, "- name: t\n  args: --steps 2\n  extra_args: '--print-summary per-kernel'\n")
    argv = plan["invocations"][0]["argv"]
    assert plan["invocations"][0]["app_argv"][-2:] == ["--steps", "2"]
    assert argv[argv.index("--print-summary") + 1] == "per-kernel"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("CUDA_VISIBLE_DEVICES=0 python3 b.py", "write env: {CUDA_VISIBLE_DEVICES: '0'}"),
        ("python3 b.py | tee out", "'|' is shell syntax"),
        ("python3 b.py > out.txt", "'>' is shell syntax"),
        ("python3 a.py && python3 b.py", "'&&' is shell syntax"),
    ],
)
def test_2_shell_syntax_in_a_command_no_shell_runs_is_an_error(tmp_path: Path, command: str, expected: str) -> None:
    text = f"application:\n  command: {json.dumps(command)}\ntargets:\n  - name: t\n"
    done = cli(tmp_path, "validate", "camp.yaml", text=text)
    assert done.returncode == 2 and "camp.yaml:2: application.command:" in done.stderr and expected in done.stderr
    shell = f"application:\n  command: {json.dumps(command)}\n  shell: true\ntargets:\n  - name: t\n"
    assert cli(tmp_path, "validate", "camp.yaml", text=shell).returncode == 0  # a shell does run it here


def test_2_a_regex_alternation_inside_quotes_is_not_shell_syntax(tmp_path: Path) -> None:
    text = "application:\n  command: \"python3 b.py --pick 'a|b'\"\ntargets:\n  - name: t\n"
    done = cli(tmp_path, "plan", "camp.yaml", "--format", "json", text=text)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["invocations"][0]["app_argv"] == ["python3", "b.py", "--pick", "a|b"]


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


def test_3_a_file_with_many_problems_gets_all_of_them_once_in_one_pass(tmp_path: Path) -> None:
    done = cli(tmp_path, "validate", "camp.yaml", text=EIGHT_PROBLEMS)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    problems = [line for line in lines[:-1] if line.startswith("camp.yaml:")]
    assert lines[-1].endswith("camp.yaml: 11 problems"), lines[-1]
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


def test_3_a_bad_application_command_is_reported_once_for_all_targets(tmp_path: Path) -> None:
    text = 'application:\n  command: "python3 \'x"\ntargets:\n  - name: a\n  - name: b\n'
    done = cli(tmp_path, "validate", "camp.yaml", text=text)
    assert done.stderr.count("application.command") == 1 and "camp.yaml: 1 problem\n" in done.stderr


def test_3_pydantic_words_never_reach_the_user(tmp_path: Path) -> None:
    text = "application:\n  command: {a: 1}\ntargets:\n  - just a string\n  - name: b\n    sections: {x: 1}\n"
    done = cli(tmp_path, "validate", "camp.yaml", text=text)
    assert done.returncode == 2
    assert "Input should" not in done.stderr and "instance of" not in done.stderr, done.stderr
    assert "targets[0]: expected a mapping (key: value)" in done.stderr


def test_3_a_tab_says_to_indent_with_spaces(tmp_path: Path) -> None:
    done = cli(tmp_path, "validate", "camp.yaml", text="application:\n\tcommand: x\ntargets: [{name: a}]\n")
    assert done.returncode == 2 and "camp.yaml:2:" in done.stderr and "indent with spaces" in done.stderr


def write_run(folder: Path, targets: list) -> Path:
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(manifest_with(targets).model_dump_json())
    return folder


def result(duration: float) -> dict:
    return {"index": 0, "kernel": "k", "demangled": "k", "workload": "kernel",
            "metrics": {DURATION: {"value": duration, "unit": "nsecond"}}}  # fmt: skip


@pytest.mark.parametrize(
    ("b_targets", "metric", "problem"),
    [
        (
            [target_record("a", Status.NO_KERNELS, message="filters matched nothing")],
            None,
            "a: ok in A, no_kernels in B",
        ),
        ([target_record("z", results=[result(100)])], None, "a: in A, missing from B"),
        ([target_record("a", results=[result(100)])], "dram__bytes.sum", "--metric dram__bytes.sum: neither run"),
    ],
    ids=["no-longer-ok", "missing-and-nothing-compared", "unknown-metric"],
)
def test_4_compare_fails_on_what_a_ci_job_must_know(tmp_path: Path, b_targets: list, metric, problem: str) -> None:
    run_a = write_run(tmp_path / "a", [target_record("a", results=[result(100)])])
    run_b = write_run(tmp_path / "b", b_targets)
    extra = ("--metric", metric) if metric else ()
    done = run_cli("compare", str(run_a), str(run_b), "--fail-on-regression", *extra, cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert problem in done.stdout
    clean = run_cli("compare", str(run_a), str(run_a), "--fail-on-regression", cwd=tmp_path)
    # One sample a side decides nothing: AMBIGUOUS, which fails a gate only with --strict.
    assert clean.returncode == 0 and "1 value compared, 0 flagged; verdicts: 1 AMBIGUOUS; 0 problems" in clean.stdout
    strict = run_cli("compare", str(run_a), str(run_a), "--fail-on-regression", "--strict", cwd=tmp_path)
    assert strict.returncode == 1 and "5 a side can" in strict.stdout, strict.stdout


def test_5_plan_dry_run_and_run_use_the_same_output_folder_wherever_they_run(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "camp.yaml").write_text(campaign_text("- name: t\n  kernel_name: rmsnorm_kernel\n"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    expected_root = project / "runs" / "camp"
    outputs = []
    for cwd, args in ((elsewhere, ("plan", str(project / "camp.yaml"))), (project, ("run", "camp.yaml", "--dry-run"))):
        done = run_cli(*args, cwd=cwd)
        assert done.returncode == 0, done.stderr
        outputs.append(re.search(r"-o '?(\S+?)'? ", done.stdout).group(1))
    assert outputs[0] == str(expected_root / "plan" / "reports" / f"t{REPORT}")
    assert outputs[1] == str(expected_root / "<run-id>" / "reports" / f"t{REPORT}")
    done = run_cli("run", str(project / "camp.yaml"), cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    run_dir, manifest = load_manifest(project / "runs")
    assert target(manifest, "t")["report"]["path"] == f"reports/t{REPORT}" and run_dir.parent == expected_root
    assert not (elsewhere / "runs").exists()


def test_6_lint_ignore_adds_to_defaults_and_unknown_codes_are_errors(tmp_path: Path) -> None:
    targets = "- name: t\n  nvtx_include: step\n  python_include: f.py@g\n  lint_ignore: [NCU008]\n"
    done = cli(tmp_path, "validate", "camp.yaml", text=campaign_text(targets, defaults="lint_ignore: [NCU001]"))
    assert done.returncode == 0 and "warning" not in done.stdout, done.stdout  # NCU001 from defaults still silenced
    done = cli(tmp_path, "validate", "camp.yaml", text=campaign_text("- name: t\n  lint_ignore: [NCU01]\n"))
    assert done.returncode == 2 and "no warning has the code 'NCU01'; did you mean" in done.stderr


def test_6_ncu009_suggests_the_section_meant_and_ncu004_speaks_of_sections(tmp_path: Path) -> None:
    text = campaign_text(
        "- name: t\n  sections: [SpeedOfLite]\n  launch_count: 1\n"
        "- name: u\n  sections: [SpeedOfLight, LaunchStats, Occupancy, SchedulerStats]\n",
        defaults="",
    ).replace("  launch_count: 1\n  timeout", "  timeout", 1)
    done = cli(tmp_path, "validate", "camp.yaml", text=text)  # the fake ncu lists the real sections
    assert "NCU009" in done.stdout and "did you mean 'SpeedOfLight'?" in done.stdout, done.stdout
    ncu004 = next(line for line in done.stdout.splitlines() if "NCU004" in line)
    assert "4 sections" in ncu004 and "--set full" not in ncu004


def test_7_retry_delay_takes_a_duration_like_timeout(tmp_path: Path) -> None:
    text = campaign_text("- name: t\n  retry_delay: 1s\n  timeout: 30s\n").replace("  retry_delay: 0\n", "")
    assert cli(tmp_path, "validate", "camp.yaml", text=text).returncode == 0


def test_8_a_misspelled_kernel_gets_the_closest_exact_name_not_a_broad_regex() -> None:
    console = parse_console((FIXTURES / "logs" / "nomatch.log").read_text())
    for typo in ("rmsnrm_kernel", "rmsnrom_kernel"):
        hints = diagnose(TargetOptions(kernel_name=typo), console, Status.NO_KERNELS)
        assert hints[-1] == "kernel_name: rmsnorm_kernel", hints


def test_9_a_report_that_reads_empty_after_ncu_profiled_is_not_ok(tmp_path: Path, write_campaign) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "name_exact.ncu-rep").write_bytes(b"not a report")  # ncu_report reads it as empty
    campaign = write_campaign("- name: t\n  kernel_name: rmsnorm_kernel\n")
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=fake_env(FAKE_NCU_REPORTS=str(reports)))
    assert done.returncode == 1
    _, manifest = load_manifest(tmp_path / "runs")
    record = target(manifest, "t")
    assert record["status"] == "profiler_error" and "ncu's console shows 1 profiled" in record["message"]
    junk = reports / "name_exact.ncu-rep"
    done = run_cli("summarize", str(junk), cwd=tmp_path)
    assert done.returncode == 2 and "holds no results" in done.stderr and "pip install" not in done.stderr


def test_10_counts_are_in_words(tmp_path: Path) -> None:
    done = cli(tmp_path, "validate", "camp.yaml", text=campaign_text("- name: t\n"))
    assert "ok (1 target, 1 ncu invocation)" in done.stdout
    bad = campaign_text("- name: t\n  launch_count: 0\n")
    assert "1 problem\n" in cli(tmp_path, "validate", "camp.yaml", text=bad).stderr
    assert "1 problem; nothing was run." in cli(tmp_path, "run", "camp.yaml", text=bad).stderr


def test_10_a_bare_off_read_as_false_says_to_quote_it(tmp_path: Path) -> None:
    done = cli(tmp_path, "validate", "camp.yaml", text=campaign_text("- name: t\n  share: off\n"))
    assert done.returncode == 2
    assert "targets[0].share: must be 'auto' or 'off' (YAML read a bare word as false: quote it" in done.stderr
