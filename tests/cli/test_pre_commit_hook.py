"""The pre-commit hook (`.pre-commit-hooks.yaml`, issue 82): `pre-commit try-repo` of this repository validates
campaign files as a repository using the hook would, without ncu or a GPU: a good file passes, a bad one fails
with validate's file:line message."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PRE_COMMIT = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which("pre-commit")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed (extra dev)"),
]

EXAMPLE = ROOT / "examples" / "pre-commit-config.yaml"
GOOD = "application:\n  command: python3 app.py\ntargets:\n  - name: a\n    kernel_name: rmsnorm_kernel\n"
BAD = "application:\n  command: python3 app.py\ntargets:\n  - name: a\n    lauch_count: 3\n"


def test_pre_commit_try_repo_passes_a_good_campaign_and_fails_a_bad_one_with_validates_message(tmp_path: Path) -> None:
    user = tmp_path / "user"
    (user / "campaigns").mkdir(parents=True)
    for name, text in (("good.yaml", GOOD), ("bad.yaml", BAD), ("app.py", "")):
        (user / "campaigns" / name).write_text(text)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q"], cwd=user, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=user, check=True, env=env)
    assert PRE_COMMIT is not None

    def hook(*files: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PRE_COMMIT, "try-repo", str(ROOT), "ncucampaign-validate", "--files", *files],
            cwd=user, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip

    both = hook("campaigns/good.yaml", "campaigns/bad.yaml")  # each try-repo installs the hook afresh: one
    assert both.returncode == 1, both.stdout + both.stderr
    assert "campaigns/bad.yaml:5: targets[0].lauch_count: unknown key 'lauch_count'; did you mean 'launch_count'?" in (
        both.stdout
    )
    assert "campaigns/good.yaml: ok" in both.stdout

    # README's snippet (examples/pre-commit-config.yaml) as a repository would use it, pointed at this checkout:
    # installed once into PRE_COMMIT_HOME, then a good file passes and a bad one fails
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    config = EXAMPLE.read_text().replace("https://github.com/OWNER/ncucampaign", str(ROOT))
    (user / ".pre-commit-config.yaml").write_text(config.replace("rev: v0.1.0", f"rev: {head.strip()}"))
    subprocess.run(["git", "add", "-A"], cwd=user, check=True, env=env)

    def run(*files: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PRE_COMMIT, "run", "--files", *files], cwd=user, env=env, capture_output=True, text=True, timeout=600
        )

    good = run("campaigns/good.yaml")
    assert good.returncode == 0 and "Passed" in good.stdout, good.stdout + good.stderr
    pasted = run("campaigns/good.yaml", "campaigns/bad.yaml")
    assert pasted.returncode == 1 and "did you mean 'launch_count'?" in pasted.stdout, pasted.stdout + pasted.stderr


def test_the_readme_shows_the_example_config_as_it_is() -> None:
    assert EXAMPLE.read_text() in (ROOT / "README.md").read_text()
