"""Shared test helpers: the fake ncu on PATH, campaign files in tmp_path, the CLI as a subprocess."""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from ncucampaign.errors import CampaignError
from ncucampaign.plan.expand import Invocation
from ncucampaign.spec.loader import parse_campaign
from ncucampaign.spec.model import TargetOptions
from tests.inner_loop_budget import (  # noqa: F401 (the hooks: a test over its budget is listed at the end)
    pytest_runtest_call,
    pytest_runtest_logreport,
    write_over_budget,
)


@pytest.fixture(autouse=True)
def _signal_handlers_kept() -> Iterator[None]:
    """A test that leaves SIGINT or SIGTERM handled otherwise changes every later test of its worker (a
    run stopped in the test's process leaves them ignored, as a process about to print its summary and
    exit: execute/process/signals.py). Such a test fails, and the handlers are put back."""
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    changed = [number.name for number, handler in before.items() if signal.getsignal(number) is not handler]
    for number, handler in before.items():
        signal.signal(number, handler)
    if changed:
        pytest.fail(f"the test left the {' and '.join(changed)} handler changed", pytrace=False)


@contextlib.contextmanager
def signal_handlers_restored() -> Iterator[None]:
    """Around the CLI run in the test's process: a process would end after it, later tests keep theirs."""
    handlers = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)


TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
FAKE_NCU_DIR = TESTS / "fake_ncu"
FAKE_APP = FAKE_NCU_DIR / "fake_app.py"
DOC_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]  # the README and what it links to


def docs_text() -> str:
    """The README and every page of docs/, one after another."""
    return "\n".join(page.read_text() for page in DOC_PAGES)


FIXTURES = TESTS / "fixtures"


def _fake_release() -> tuple[int, int]:
    year, minor = (os.environ.get("FAKE_NCU_VERSION") or "2025.3").split(".")[:2]
    return int(year), int(minor)


# The suffix of the reports a run writes under the fake ncu of $FAKE_NCU_VERSION: the suite runs as
# 2025.3.1 and again as 2026.3.1 (.ci/run), whose reports are .ncu-repz (spec/ncu_versions.py).
REPORT = ".ncu-repz" if _fake_release() >= (2026, 3) else ".ncu-rep"


def _python_shim() -> Path:
    """A folder whose `python3` is the tests' own interpreter: the fake ncu (`#!/usr/bin/env python3`)
    and the campaigns' `python3 app.py` run under it, not under the first python3 on PATH (outside
    the venv, that one lacked zstandard and a test failed)."""
    folder = Path(tempfile.mkdtemp(prefix="ncucampaign-python-"))
    atexit.register(shutil.rmtree, folder, True)
    shim = folder / "python3"  # a script, not a link: a venv's python is known by where it is started
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -S "$@"\n')
    shim.chmod(0o755)
    return folder


PYTHON_SHIM = _python_shim()


def _session_folder() -> Path:
    """This test process's own state: the fake ncu's record of the reports it wrote (FAKE_NCU_STATE) and the cache
    of what the installed ncu lists (XDG_CACHE_HOME). Not /tmp's or HOME's: what an earlier run left there (another
    checkout's fake, the fake as another version) must not reach this one (issue 78)."""
    folder = Path(tempfile.mkdtemp(prefix="ncucampaign-tests-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


SESSION = _session_folder()
# In this process's environment, so that every process a test starts has them, through fake_env() or not.
os.environ["FAKE_NCU_STATE"] = str(SESSION / "fake-ncu-state")
os.environ["XDG_CACHE_HOME"] = str(SESSION / "cache")
os.environ["XDG_CONFIG_HOME"] = str(SESSION / "config")  # the key run directories are sealed with (rundir/seal.py)


def checkout_in(folder: Path, *parts: str) -> None:
    """The parts of a checkout a README block reads, copied into `folder` at the same paths."""
    for part in parts:
        source, target = ROOT / part, folder / part
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copyfile)(source, target)


def tracked_copy(folder: Path) -> Path:
    """The checkout's tracked files (git ls-files) copied into `folder`: the package as a clone has it, without
    what building or testing left beside it (build/, *.egg-info, .venv)."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for name in (n.decode() for n in names if n):
        source = ROOT / name
        if source.is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
    return folder


def fake_env(**extra: str) -> dict[str, str]:
    """The environment a CLI run under test gets: the fake ncu first on PATH, under this Python."""
    env = dict(os.environ)
    env["PATH"] = f"{FAKE_NCU_DIR}{os.pathsep}{PYTHON_SHIM}{os.pathsep}{env.get('PATH', '')}"
    env["FAKE_NCU_REPORTS"] = str(FIXTURES / "reports")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("NCUCAMPAIGN_NCU", None)
    env.pop("NCUCAMPAIGN_NSYS", None)  # the trace is ncu's unless a test hands it the fake nsys
    env["NCUCAMPAIGN_CHECK_JOURNAL"] = "1"  # every change recorded names every record it changed (execute/rundir/book)
    env.update(extra)
    return env


def campaign_text(targets: str, defaults: str = "", application_extra: str = "") -> str:
    """A campaign on the fake application; `targets` and `defaults` are YAML blocks (unindented)."""
    default_block = textwrap.indent(textwrap.dedent(defaults).strip(), "  ") if defaults.strip() else ""
    return (
        "application:\n"
        f"  command: [{json.dumps(sys.executable)}, -S, {json.dumps(str(FAKE_APP))}]\n"
        f"{application_extra}"
        "defaults:\n"
        "  sections: SpeedOfLight\n"
        "  launch_count: 1\n"
        "  timeout: 30\n"
        "  retries: 0\n"
        "  retry_delay: 0\n"
        "  stop_grace: 2\n"
        f"{default_block}\n"
        "targets:\n" + textwrap.indent(textwrap.dedent(targets).strip(), "  ") + "\n"
    )


@pytest.fixture
def write_campaign(tmp_path: Path):
    def write(targets: str, defaults: str = "", name: str = "camp.yaml", **kwargs: Any) -> Path:
        path = tmp_path / name
        path.write_text(campaign_text(targets, defaults, **kwargs))
        return path

    return write


def logging_ncu(folder: Path) -> tuple[Path, Path]:
    """An ncu that writes each command line it is given to a log, then is the fake ncu (in `folder`:
    a log in the application's working directory would change the workload the trace cache keys on)."""
    folder.mkdir()
    calls, wrapper = folder / "calls.log", folder / "ncu"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {FAKE_NCU_DIR / "ncu"} "$@"\n')
    wrapper.chmod(0o755)
    return calls, wrapper


# Commands run in the test's process through cli.main: a process start each cost 0.3-0.5 s of CPU, and
# 1,170 CLI processes were most of the suite's CPU on 2 cores. What a process starts (ncu,
# the application, report readers) still runs as a process; signals, Ctrl-C and kills are tested on a
# CLI process of its own (Popen in those tests), as are `ab`, `discover`, `doctor`, `collect` and the
# task entries. NCUCAMPAIGN_TEST_SUBPROCESS=1 runs every command in a process of its own.
IN_PROCESS = frozenset(
    {"validate", "plan", "run", "summarize", "compare", "reference", "history", "findings", "report"}
)


def _needs_a_process(env: dict[str, str]) -> bool:
    """Variables only a new interpreter honours (PYTHONPATH shadowing a module, say)."""
    if env.get("PYTHONPATH") != fake_env().get("PYTHONPATH"):
        return True
    names = {name for name in {*env, *os.environ} if name.startswith("PYTHON") and name != "PYTHONPATH"}
    return any(env.get(name) != os.environ.get(name) for name in names)


def run_cli_here(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The CLI's `main` in this process (the inner loop's golden plans: a process start per plan cost
    1.3-2.2 s of a 2-core machine): its exit code and what it printed, with `cwd` and exactly `env`.
    What a process would start afresh is made afresh: the caches of what the installed ncu accepts."""
    from ncucampaign.cli import main
    from ncucampaign.execute.attempt import ncu_checks

    for cached in vars(ncu_checks).values():
        if callable(getattr(cached, "cache_clear", None)):
            cached.cache_clear()
    out, err, here = io.StringIO(), io.StringIO(), os.getcwd()
    argv = ["ncucampaign", *args]  # what a run records as its command line (resume reads its flags back)
    with (
        mock.patch.dict(os.environ, env, clear=True),
        mock.patch.object(sys, "argv", argv),
        redirect_stdout(out),
        redirect_stderr(err),
    ):
        os.chdir(cwd)
        try:
            with signal_handlers_restored():
                code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 2
        finally:
            os.chdir(here)
    return subprocess.CompletedProcess(["ncucampaign", *args], code, out.getvalue(), err.getvalue())


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = env if env is not None else fake_env()
    # --k8s: the Kubernetes client reads KUBECONFIG once, when it is imported: each test's own server
    # needs a process of its own.
    in_process = (
        os.environ.get("NCUCAMPAIGN_TEST_SUBPROCESS") != "1" and not _needs_a_process(env) and "--k8s" not in args
    )
    if args and args[0] in IN_PROCESS and in_process:
        return run_cli_here(*args, cwd=cwd, env=env)
    return subprocess.run(
        [sys.executable, "-m", "ncucampaign", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cli_in(
    tmp_path: Path, *args: str, text: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI run in `tmp_path` (or `cwd`) under the fake ncu; with `text`, the campaign `camp.yaml` written first."""
    if text is not None:
        (tmp_path / "camp.yaml").write_text(text)
    return run_cli(*args, cwd=cwd or tmp_path, env=fake_env())


BARE_APP = "application:\n  command: python3 bench.py\n"  # a campaign's first lines, where only validation runs


def campaign_problems(text: str) -> list[str]:
    """The problems validation finds in a campaign's text, as `line:key.path: message`."""
    with pytest.raises(CampaignError) as caught:
        parse_campaign(text, Path("camp.yaml"))
    return [f"{p.line}:{p.key_path()}: {p.message}" for p in caught.value.problems]


def load_manifest(run_root: Path, campaign: str = "camp") -> tuple[Path, dict[str, Any]]:
    """The latest run's manifest as its readers see it: manifest.json with the journal's changes applied (a run
    that goes on, or was killed, has its last changes there)."""
    from ncucampaign.execute.rundir.reading import RunFileDamaged, read_manifest

    run_dir = (run_root / campaign / "latest").resolve()
    try:
        return run_dir, read_manifest(run_dir).model_dump(mode="json")
    except RunFileDamaged as exc:  # not there yet (a test waiting on a run that starts): what waiting loops catch
        if exc.opened:
            raise
        raise FileNotFoundError(str(exc)) from None


def target(manifest: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in manifest["targets"] if t["name"] == name)


def alive(pid: int) -> bool:
    """True when pid is a live process (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def gone(pid: int) -> bool:
    """The process ends (SIGKILL is delivered as the kernel gets to it): waited for, not assumed."""
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return not alive(pid)


def pytest_terminal_summary(terminalreporter) -> None:
    """How many hostile cases the generated suite ran (the closing note reports it), and the tests over the inner
    loop's CPU budget."""
    write_over_budget(terminalreporter)
    suite = sys.modules.get("tests.hostile.test_generated")
    if suite is not None and suite.CASES:
        counts = ", ".join(f"{count} {kind}" for kind, count in sorted(suite.CASES.items()))
        terminalreporter.write_line(f"hostile inputs: {sum(suite.CASES.values())} cases ({counts})")


def invocation(name: str = "t", **options: Any) -> Invocation:
    """A plain invocation for unit tests of the pure core: `options` are its TargetOptions."""
    return Invocation(
        name=name,
        target=name,
        target_index=0,
        matrix=(),
        options=TargetOptions(**options),
        app_argv=("app",),
        env=(),
        cwd=Path("."),
        timeout=600.0,
        retries=1,
        retry_delay=10.0,
        stop_grace=20.0,
    )
