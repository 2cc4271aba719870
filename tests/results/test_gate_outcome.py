"""The gate agrees with itself: with one sample a side (a campaign without `samples:`), a
change beyond the size threshold decides; the change table speaks the verdicts' words; the last line
says the outcome and why; JUnit and Markdown for CI; `ab` without --a/--b calibrates."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import campaign_text, checkout_in, fake_env, run_cli

pytestmark = pytest.mark.slow  # runs the CLI end to end


def runs_a_and_b(tmp_path: Path, factor: float) -> tuple[Path, Path]:
    """A real run of two targets (one sample each), and a copy of it whose durations are `factor` times."""
    targets = "- name: rms\n  kernel_name: rmsnorm_kernel\n- name: gemm\n  kernel_name: regex:nvjet\n  launch_skip: 1\n"
    (tmp_path / "camp.yaml").write_text(campaign_text(targets, defaults='share: "off"'))
    assert run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env()).returncode == 0
    a = (tmp_path / "runs" / "camp" / "latest").resolve()
    b = tmp_path / "b"
    shutil.copytree(a, b)
    manifest = json.loads((b / "manifest.json").read_text())
    for record in manifest["targets"]:
        if record["name"] == "gemm":
            for result in record["results"]:
                result["metrics"]["gpu__time_duration.sum"]["value"] *= factor
    (b / "manifest.json").write_text(json.dumps(manifest))
    return a, b


def test_a_50_percent_slowdown_with_one_sample_a_side_fails_the_gate_and_says_why(tmp_path: Path) -> None:
    a, b = runs_a_and_b(tmp_path, 1.5)
    junit, summary = tmp_path / "verdicts.xml", tmp_path / "summary.md"
    summary.write_text("earlier steps\n")
    done = run_cli(
        "compare",
        str(a),
        str(b),
        "--fail-on-regression",
        "--junit",
        str(junit),
        "--markdown",
        str(summary),
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("gate: FAIL: 1 SLOWER (gemm +50%)"), done.stdout
    assert "by size alone: 1 sample a side" in done.stdout
    assert "REGRESSION" not in done.stdout  # the change table says SLOWER, as the verdict does
    [row] = [line for line in done.stdout.splitlines() if "+50.0%" in line and "duration (ns)" in line]
    assert "SLOWER" in row
    suite = ET.fromstring(junit.read_text())
    assert suite.get("failures") == "1" and int(suite.get("tests")) >= 2
    [failed] = [case for case in suite if case.find("failure") is not None]
    assert failed.get("classname") == "gemm" and failed.get("name") == "duration"
    assert failed.find("failure").get("type") == "SLOWER"
    text = summary.read_text()
    assert text.startswith("earlier steps\n### ncucampaign compare") and "**gate: FAIL: 1 SLOWER (gemm +50%)**" in text
    quiet = json.loads(run_cli("compare", str(a), str(b), "--format", "json", cwd=tmp_path).stdout)
    assert quiet["gate"] == {"passed": False, "line": last, "verdict": "SLOWER"}
    kept = tmp_path / "gate.json"  # --json: the same document in a file, the tables still on the console
    told = run_cli("compare", str(a), str(b), "--fail-on-regression", "--json", str(kept), cwd=tmp_path)
    assert told.returncode == 1 and told.stdout == done.stdout and json.loads(kept.read_text()) == quiet


def test_a_3_percent_change_with_one_sample_a_side_passes_and_says_what_would_decide(tmp_path: Path) -> None:
    a, b = runs_a_and_b(tmp_path, 1.03)
    done = run_cli("compare", str(a), str(b), "--fail-on-regression", "--junit", str(tmp_path / "j.xml"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("gate: pass: ") and "AMBIGUOUS" in last and "samples: 5 a side would decide" in last, last
    assert ET.fromstring((tmp_path / "j.xml").read_text()).get("failures") == "0"
    strict = run_cli("compare", str(a), str(b), "--fail-on-regression", "--strict", cwd=tmp_path)
    assert strict.returncode == 1 and strict.stdout.strip().splitlines()[-1].startswith("gate: FAIL: ")
    bigger = run_cli("compare", str(a), str(b), "--fail-on-regression", "--size-threshold", "2", cwd=tmp_path)
    assert bigger.returncode == 1 and "gate: FAIL: 1 SLOWER (gemm +3%)" in bigger.stdout


def test_ab_without_a_or_b_calibrates_one_line_a_run(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: t\n  kernel_name: rmsnorm_kernel\n  samples: 3\n"))
    done = run_cli("ab", "camp.yaml", "--pairs", "2", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "calibration: 0 false verdicts of 1 (expected 0)" in done.stdout
    assert "smallest shift it detects" in done.stdout
    lines = [line for line in done.stderr.splitlines() if line.startswith("ncucampaign ab: pair ")]
    assert len(lines) == 4 and all(" ok in " in line for line in lines), done.stderr
    assert "manifest: " not in done.stderr and "invocation ->" not in done.stderr  # no run output without --verbose
    verbose = run_cli("ab", "camp.yaml", "--pairs", "1", "--verbose", cwd=tmp_path, env=fake_env())
    assert verbose.returncode == 0 and "manifest: " in verbose.stderr and "invocation ->" in verbose.stderr


def test_the_readme_github_actions_job_runs_as_written(tmp_path: Path) -> None:
    """Every `run:` step of the README's job, in a checkout's layout, against the fake ncu (the runner's
    ncu), with a file for $GITHUB_STEP_SUMMARY; the pip install is the one step not run."""
    import re
    import shlex
    import subprocess
    import sys

    import yaml

    from tests.conftest import ROOT, docs_text

    job = yaml.safe_load(re.search(r"```yaml\n(name: profile-gate\n.*?)```", docs_text(), re.S)[1])
    steps = [step["run"] for step in job["jobs"]["gate"]["steps"] if "run" in step]
    assert steps[0].startswith("pip install")
    checkout_in(tmp_path, "campaigns/try.yaml", "tests/fake_ncu", "tests/fixtures/reports", "ncucampaign/spec/data")
    summary = tmp_path / "step-summary.md"
    setup = (
        f'export PATH="$PWD/tests/fake_ncu:$PATH" FAKE_NCU_REPORTS="$PWD/tests/fixtures/reports" '
        f"GITHUB_STEP_SUMMARY={shlex.quote(str(summary))}\n"
        f'ncucampaign() {{ PYTHONPATH={shlex.quote(str(ROOT))} {shlex.quote(sys.executable)} -m ncucampaign "$@"; }}\n'
    )
    for step in steps[1:]:
        done = subprocess.run(["bash", "-ec", setup + step], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert ET.fromstring((tmp_path / "ncu-gate.xml").read_text()).get("failures") == "0"
    assert "**gate: pass: " in summary.read_text()


def test_without_fail_on_regression_the_gate_line_says_it_would_fail_not_that_it_failed(tmp_path: Path) -> None:
    """Before the fix: `gate: FAIL: 1 SLOWER ...` and exit 0, which a CI log reads as a failure that did not fail."""
    a, b = runs_a_and_b(tmp_path, 1.5)
    done = run_cli("compare", str(a), str(b), cwd=tmp_path)
    assert done.returncode == 0
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("gate: would FAIL with --fail-on-regression: 1 SLOWER (gemm +50%)"), last


def test_a_target_whose_results_are_gone_from_b_fails_the_gate(tmp_path: Path) -> None:
    """Before the fix: a target ok in both runs whose results B no longer held dropped out, and the gate passed."""
    a, b = runs_a_and_b(tmp_path, 1.0)
    manifest = json.loads((b / "manifest.json").read_text())
    next(t for t in manifest["targets"] if t["name"] == "gemm")["results"] = []
    (b / "manifest.json").write_text(json.dumps(manifest))
    done = run_cli("compare", str(a), str(b), "--fail-on-regression", cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert "problem: gemm: ok in both, but B holds none of its results (A holds 1)" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("gate: FAIL: 1 problem (gemm: ok in both")


def test_the_gate_line_cuts_a_long_problem_between_words_never_inside_a_name(tmp_path: Path) -> None:
    """Before the fix: `...; they hold ..., gpc__cycles_elap)`: a metric's name cut in two."""
    a, b = runs_a_and_b(tmp_path, 1.0)
    done = run_cli("compare", str(a), str(b), "--metric", "no__such_metric_anywhere.sum", cwd=tmp_path)
    problem = next(line for line in done.stdout.splitlines() if line.startswith("problem: --metric"))
    held = set(problem.split("they hold ", 1)[1].rstrip(", .").split(", "))
    gate = done.stdout.strip().splitlines()[-1]
    cut = gate.split("(--metric ", 1)[1]
    assert cut.endswith(" ...)"), gate
    shown = cut.removesuffix(" ...)").split("they hold ", 1)[1].split(", ")
    assert all(name in held for name in shown), (shown, held)
