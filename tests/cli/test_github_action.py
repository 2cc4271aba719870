"""The GitHub Action (action.yml) and the example workflow (examples/github-workflow.yml), run the way a runner runs
them (tests/cli/actions_runner.py): on the fake ncu, over a repository the test makes with two commits, the second
of which slows one kernel (its workload passes the fake application `--slower rmsnorm=1.5`). The action installs
ncucampaign from a copy of this checkout's tracked files into a virtual environment of its own (pip: one install for
the module, a self-hosted runner's RUNNER_TEMP kept between its jobs), checks the base out beside the pull request
and runs `ab` with A the base and B the pull request."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli.actions_runner import Job, new_job, run_action, run_job
from tests.conftest import ROOT, fake_env, tracked_copy

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="the action checks the base out with git"),
]

FAKE_APP = ROOT / "tests" / "fake_ncu" / "fake_app.py"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
CAMPAIGN = """\
application:
  command: [python3, workload.py]
  cwd: ..
defaults:
  sections: SpeedOfLight
  timeout: 60
  retries: 0
targets:
  - name: rms
    kernel_name: rmsnorm_kernel
    launch_count: 3
  - name: gemm
    kernel_name: regex:nvjet
    launch_skip: 1
"""


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def workload(*slower: str) -> str:
    """The repository's workload: the fake application, with what this commit changed."""
    return f"import os, sys\nos.execv(sys.executable, [sys.executable, '-S', {str(FAKE_APP)!r}, *{list(slower)!r}])\n"


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo)


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    """A bare repository: main (the base) and the pull request's branches pr (slows rmsnorm), docs (changes no
    kernel) and adds (adds a campaign); lib, whose workload imports its knob from src/, and lib-pr from it."""
    top = tmp_path_factory.mktemp("origin")
    work, bare = top / "work", top / "origin.git"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    base = commit(work, {"campaigns/decode.yaml": CAMPAIGN, "workload.py": workload()}, "the workload")
    git("checkout", "-q", "-b", "pr", cwd=work)
    heads = {"pr": commit(work, {"workload.py": workload("--slower", "rmsnorm=1.5")}, "a slower rmsnorm")}
    git("checkout", "-q", "-b", "docs", base, cwd=work)
    heads["docs"] = commit(work, {"README.md": "words\n"}, "words only")
    git("checkout", "-q", "-b", "adds", base, cwd=work)
    heads["adds"] = commit(work, {"campaigns/more.yaml": CAMPAIGN}, "a new campaign")
    git("checkout", "-q", "-b", "lib", base, cwd=work)  # a workload whose knob is a module it imports
    lib = {"src/knob.py": "SLOWER = []\n", "campaigns/lib.yaml": CAMPAIGN.replace("workload.py", "workload_lib.py")}
    lib["workload_lib.py"] = (
        workload().replace("import os, sys\n", "import os, sys\nimport knob\n").replace("[]]", "knob.SLOWER]")
    )
    heads["lib"] = commit(work, lib, "the knob in a module")
    git("checkout", "-q", "-b", "lib-pr", cwd=work)
    heads["lib-pr"] = commit(work, {"src/knob.py": "SLOWER = ['--slower', 'rmsnorm=1.5']\n"}, "a slower rmsnorm")
    git("clone", "-q", "--bare", str(work), str(bare), cwd=top)
    git("config", "uploadpack.allowReachableSHA1InWant", "true", cwd=bare)  # as GitHub's: a fetch by commit
    return bare, base, heads


@pytest.fixture(scope="module")
def action(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The action's own checkout, as `uses:` gives a runner: this checkout's tracked files."""
    return tracked_copy(tmp_path_factory.mktemp("action") / "ncucampaign")


@pytest.fixture(scope="module")
def runner_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runner-temp")


def pull_request(origin: tuple[Path, str, dict[str, str]], head: str, tmp_path: Path, full: bool) -> tuple[Path, dict]:
    """The workspace as actions/checkout leaves it for a pull request (one commit deep, unless `full`), and the
    github context of its pull_request event."""
    bare, base, heads = origin
    workspace = tmp_path / "workspace"
    depth = [] if full else ["--depth", "1"]
    git("clone", "-q", *depth, "--branch", head, f"file://{bare}", str(workspace), cwd=tmp_path)
    event = {"pull_request": {"number": 7, "base": {"sha": base, "ref": "main"}, "head": {"sha": heads[head]}}}
    github = {"event_name": "pull_request", "sha": heads[head], "base_ref": "main", "head_ref": head, "event": event}
    return workspace, github


def runner_env() -> dict[str, str]:
    """The runner's environment: ncu (the fake) on PATH, no checkout of ncucampaign on PYTHONPATH."""
    env = fake_env()
    env.pop("PYTHONPATH", None)
    return env


def job_for(workspace: Path, github: dict[str, Any], tmp_path: Path, runner_temp: Path, action: Path) -> Job:
    uses = {"./": action, "OWNER/ncucampaign@v0.1.0": action}
    return new_job(workspace, tmp_path / "job", runner_env(), github, uses, runner_temp)


def test_a_pull_request_that_slows_a_kernel_fails_the_job_with_the_gates_table_and_outputs(
    origin: tuple[Path, str, dict[str, str]], tmp_path: Path, runner_temp: Path, action: Path
) -> None:
    workspace, github = pull_request(origin, "pr", tmp_path, full=False)
    job = job_for(workspace, github, tmp_path, runner_temp, action)
    ok, outputs = run_action(job, action, {"campaign": "campaigns/decode.yaml", "args": "--pairs 1"})
    log = "\n".join(job.log)
    assert not ok, log
    assert outputs["verdict"] == "SLOWER" and outputs["passed"] == "false", (outputs, log)
    assert outputs["gate-line"].startswith("gate: FAIL: 1 SLOWER (rms +50%)"), outputs
    assert job.outcomes["Profile the base (A) and the pull request (B) on this GPU"] == "success", log
    assert job.outcomes["Fail on the gate's verdict"] == "failure"
    assert "::error title=ncucampaign gate::gate: FAIL: 1 SLOWER (rms +50%)" in log
    assert "### ncucampaign ab" in job.summary and "**gate: FAIL: 1 SLOWER (rms +50%)**" in job.summary
    [row] = [line for line in job.summary.splitlines() if line.startswith("| rms ") and "duration" in line]
    assert "SLOWER" in row, job.summary
    kept = job.artifacts / "ncucampaign-gate" / "ncucampaign-runs"  # uploaded although the job failed
    manifests = sorted(kept.glob("decode/ab-*/*/decode/2*/manifest.json"))  # run directories, not latest
    assert [path.parts[-4] for path in manifests] == ["A", "B"], manifests
    for path in manifests:
        assert {t["status"] for t in json.loads(path.read_text())["targets"]} == {"ok"}
    a_campaign = next(kept.glob("decode/ab-*/A.yaml")).read_text()
    assert f"cwd: {runner_temp / 'ncucampaign-base'}" in a_campaign  # A ran the base's checkout
    assert (kept / "gate.xml").is_file() and outputs["runs-a"].endswith("/A") and outputs["runs-b"].endswith("/B")


def test_the_example_workflow_runs_its_job_and_a_gate_that_passes_passes(
    origin: tuple[Path, str, dict[str, str]], tmp_path: Path, runner_temp: Path, action: Path
) -> None:
    """examples/github-workflow.yml as written (`uses: OWNER/ncucampaign@v0.1.0` is this checkout's action), on a pull
    request that changes no kernel: the job passes, its last step says the verdict."""
    workspace, github = pull_request(origin, "docs", tmp_path, full=True)
    job = job_for(workspace, github, tmp_path, runner_temp, action)
    assert run_job(job, ROOT / "examples" / "github-workflow.yml", "profile-gate"), "\n".join(job.log)
    said = next(entry for entry in job.log if entry.startswith("== Say what the gate said"))
    assert "ncucampaign gate: " in said and "(gate: pass: " in said, said
    assert "gate: pass: " in job.summary


def test_not_a_pull_request_and_no_base_ref_is_one_clear_error_before_anything_runs(
    origin: tuple[Path, str, dict[str, str]], tmp_path: Path, runner_temp: Path, action: Path
) -> None:
    workspace, github = pull_request(origin, "pr", tmp_path, full=False)
    github = {**github, "event_name": "push", "event": {}}
    job = job_for(workspace, github, tmp_path, runner_temp, action)
    ok, outputs = run_action(job, action, {"campaign": "campaigns/decode.yaml"})
    log = "\n".join(job.log)
    assert not ok and "::error title=ncucampaign::no base to compare with: give the base-ref input" in log, log
    assert job.outcomes["Profile the base (A) and the pull request (B) on this GPU"] == "skipped"
    assert job.outcomes["Install ncucampaign from the action's own checkout"] == "skipped"  # the error came first
    assert outputs["verdict"] == "" and not job.artifacts.exists()


def test_fail_on_verdict_false_keeps_the_job_green_and_the_verdict_in_the_outputs(
    origin: tuple[Path, str, dict[str, str]], tmp_path: Path, runner_temp: Path, action: Path
) -> None:
    workspace, github = pull_request(origin, "pr", tmp_path, full=False)
    job = job_for(workspace, github, tmp_path, runner_temp, action)
    inputs = {"campaign": "campaigns/decode.yaml", "args": "--pairs 1 --only 'rm*'", "fail-on-verdict": "false"}
    inputs["base-ref"] = "main"  # a branch the one-commit checkout does not hold: fetched by name
    ok, outputs = run_action(job, action, inputs)
    assert ok and outputs["verdict"] == "SLOWER" and outputs["passed"] == "false", "\n".join(job.log)
    assert job.outcomes["Fail on the gate's verdict"] == "skipped"
    assert "gemm" not in job.summary  # --only 'rm*', quoted as a shell would, reached ab as one pattern
    assert "* branch            main       -> FETCH_HEAD" in "\n".join(job.log)


def test_the_gitlab_example_runs_its_script_and_fails_on_the_slower_kernel(
    origin: tuple[Path, str, dict[str, str]], tmp_path: Path, action: Path
) -> None:
    """examples/gitlab-ci.yml's script as a GitLab runner runs it (one bash, -eo pipefail, in the project's folder, a
    merge request's variables), ncucampaign installed from this checkout's copy where it names the release."""
    import xml.etree.ElementTree as ET

    import yaml

    _, base, heads = origin
    workspace, _ = pull_request(origin, "pr", tmp_path, full=True)  # GIT_DEPTH: 0
    job = yaml.safe_load((ROOT / "examples" / "gitlab-ci.yml").read_text())["profile-gate"]
    released = "ncucampaign[reports] @ git+https://github.com/OWNER/ncucampaign@v0.1.0"
    script = "\n".join(job["script"])
    assert released in script
    script = script.replace(released, f"ncucampaign[reports] @ file://{action}")
    variables = {"CI_PIPELINE_SOURCE": "merge_request_event", "CI_PROJECT_DIR": str(workspace)}
    variables |= {"CI_MERGE_REQUEST_DIFF_BASE_SHA": base, "CI_COMMIT_SHA": heads["pr"], "GITLAB_CI": "true"}
    done = subprocess.run(
        ["bash", "-c", "set -eo pipefail\n" + script],
        cwd=workspace,
        env={**runner_env(), **variables},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "gate: FAIL: 1 SLOWER (rms +50%)" in done.stdout
    assert "**gate: FAIL: 1 SLOWER (rms +50%)**" in (workspace / "gate.md").read_text()
    assert ET.fromstring((workspace / "gate.xml").read_text()).get("failures") == "1"
    assert len(list(workspace.glob("runs/decode/ab-*/A/decode/2*/manifest.json"))) == 3  # --pairs 3


def test_args_that_the_action_sets_itself_are_refused_before_anything_runs(
    origin: tuple[Path, str, dict[str, str]], tmp_path: Path, runner_temp: Path, action: Path
) -> None:
    """Before the fix: `args: --json mine.json` came after the action's own --json, and the outputs were empty."""
    workspace, github = pull_request(origin, "pr", tmp_path, full=False)
    job = job_for(workspace, github, tmp_path, runner_temp, action)
    ok, outputs = run_action(
        job, action, {"campaign": "campaigns/decode.yaml", "args": "--pairs 1 --json=mine.json --mark x"}
    )
    log = "\n".join(job.log)
    assert not ok and "the args input gives --json=mine.json, --mark: the action sets these itself" in log, log
    assert outputs["verdict"] == "" and not (workspace / "mine.json").exists()
    assert "A/B: " not in log and "ncucampaign ab: pair" not in log  # ab never started
    assert job.outcomes["Install ncucampaign from the action's own checkout"] == "skipped"  # nor the install


def test_a_pull_request_that_adds_the_campaign_passes_with_a_notice_and_no_gate(
    origin: tuple[Path, str, dict[str, str]], tmp_path: Path, runner_temp: Path, action: Path
) -> None:
    workspace, github = pull_request(origin, "adds", tmp_path, full=False)
    job = job_for(workspace, github, tmp_path, runner_temp, action)
    ok, outputs = run_action(job, action, {"campaign": "campaigns/more.yaml"})
    log = "\n".join(job.log)
    assert ok and outputs["verdict"] == "NEW" and outputs["passed"] == "true", log
    assert "::notice title=ncucampaign::the base has no campaigns/more.yaml (this pull request adds it)" in log
    assert "no gate: the base has no `campaigns/more.yaml`" in job.summary
    assert "A/B: " not in log and job.outcomes["Keep both sides' runs"] == "skipped"
    assert job.outcomes["Install ncucampaign from the action's own checkout"] == "skipped"  # nothing to compare
    missing = run_action(job, action, {"campaign": "campaigns/nowhere.yaml"})  # not in the pull request: at once
    assert not missing[0] and "no campaign file campaigns/nowhere.yaml in the pull request's" in "\n".join(job.log)
    assert job.outcomes["Install ncucampaign from the action's own checkout"] == "skipped"


def test_python_path_makes_each_side_import_its_own_code(
    origin: tuple[Path, str, dict[str, str]], tmp_path: Path, runner_temp: Path, action: Path
) -> None:
    """The head's src/ on the runner's PYTHONPATH (as a package installed from the head's checkout would be): with
    python-path src, the base imports its own knob (no slowdown) and the pull request its own (rmsnorm slower).
    Without python-path both sides imported the head's knob: 3 SAME, 1 AMBIGUOUS, and the gate passed."""
    _, _, heads = origin
    workspace, github = pull_request(origin, "lib-pr", tmp_path, full=False)
    job = job_for(workspace, github, tmp_path, runner_temp, action)
    job.env["PYTHONPATH"] = str(workspace / "src")
    inputs = {"campaign": "campaigns/lib.yaml", "base-ref": heads["lib"], "args": "--pairs 1", "python-path": "src"}
    ok, outputs = run_action(job, action, inputs)
    assert not ok and outputs["verdict"] == "SLOWER", "\n".join(job.log)
    a_side = next((runner_temp / "ncucampaign-runs").glob("lib/ab-*/A.yaml")).read_text()
    assert f"PYTHONPATH: {runner_temp / 'ncucampaign-base' / 'src'}:{workspace / 'src'}" in a_side, a_side
