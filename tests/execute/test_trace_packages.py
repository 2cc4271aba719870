"""A package installed or upgraded in the application's Python is part of the workload (execute/trace/cache/packages.py):
the same script launches other kernels after `pip install -U torch`, so a trace kept before is not reused, and
neither are the misses decided on it. Which Python runs a command: the interpreter it names, or the one a script's
first line names; other commands are not probed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ncucampaign.execute.trace.cache.packages import _listed, interpreter, packages_digest
from tests.conftest import campaign_text, fake_env, load_manifest, run_cli
from tests.execute.shared_campaigns import TRACE_TARGETS


@pytest.fixture(autouse=True)
def fresh() -> None:
    _listed.cache_clear()  # one listing per interpreter, environment and folder in a process: a test changes them


def test_which_python_runs_a_command(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"]}
    assert interpreter([sys.executable, "-S", "-u", "x.py"], env, tmp_path) == (sys.executable, ("-S",))
    assert interpreter([sys.executable, "-Is", "-m", "mod", "-S"], env, tmp_path) == (sys.executable, ("-I", "-s"))
    script = tmp_path / "torchrun"
    script.write_text(f"#!{sys.executable} -E\nprint(1)\n")
    assert interpreter([str(script), "--nproc-per-node", "2"], env, tmp_path) == (sys.executable, ("-E",))
    folder = Path(sys.executable).parent
    by_env = tmp_path / "accelerate"
    by_env.write_text(f"#!/usr/bin/env {Path(sys.executable).name}\n")
    found = interpreter(["./accelerate"], {"PATH": str(folder)}, tmp_path)
    assert found is not None and Path(found[0]).parent == folder
    shell = tmp_path / "run.sh"
    shell.write_text("#!/bin/bash\npython3 x.py\n")
    assert interpreter([str(shell)], env, tmp_path) is None  # what a shell script runs is not guessed
    assert interpreter(["no-such-command-here"], env, tmp_path) is None
    assert interpreter([], env, tmp_path) is None


def test_a_distribution_installed_on_its_path_changes_the_digest(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    argv = [sys.executable, "-S", "x.py"]
    before = packages_digest(argv, env, tmp_path)
    assert before is not None and before == packages_digest(argv, env, tmp_path)
    (site / "flash_attn-2.8.0.dist-info").mkdir()
    _listed.cache_clear()
    after = packages_digest(argv, env, tmp_path)
    assert after is not None and after != before
    (site / "flash_attn-2.8.0.dist-info").rename(site / "flash_attn-2.8.3.dist-info")  # an upgrade
    _listed.cache_clear()
    assert packages_digest(argv, env, tmp_path) not in (before, after)
    _listed.cache_clear()
    isolated = [sys.executable, "-I", "-S", "x.py"]  # -I: PYTHONPATH is not its path
    one = packages_digest(isolated, env, tmp_path)
    (site / "triton-3.6.0.dist-info").mkdir()
    _listed.cache_clear()
    assert packages_digest(isolated, env, tmp_path) == one


def test_a_command_that_is_no_python_or_does_not_answer_leaves_the_key_as_it_was(tmp_path: Path) -> None:
    assert packages_digest(["/bin/sh", "-c", "true"], dict(os.environ), tmp_path) is None
    broken = tmp_path / "python3"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    assert packages_digest([str(broken), "x.py"], dict(os.environ), tmp_path) is None


@pytest.mark.slow  # runs the CLI end to end
def test_a_package_installed_between_runs_makes_the_trace_run_again(tmp_path: Path) -> None:
    site, work = tmp_path / "site", tmp_path / "work"
    site.mkdir()
    work.mkdir()
    extra = f"  env: {{PYTHONPATH: {json.dumps(str(site))}}}\n"
    (work / "camp.yaml").write_text(campaign_text(TRACE_TARGETS, application_extra=extra))

    def traces() -> int:
        done = run_cli("run", "camp.yaml", "--out", "runs", cwd=work, env=fake_env())
        assert done.returncode == 0, done.stdout + done.stderr
        return sum(r["kind"] == "trace" for r in load_manifest(work / "runs")[1]["shared_runs"])

    assert traces() == 1
    assert traces() == 0  # the kept trace
    (site / "torch-2.11.0.dist-info").mkdir()  # outside the workload's folder: only its Python sees it
    assert traces() == 1
    assert traces() == 0
