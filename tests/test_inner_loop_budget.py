"""The inner loop's budget (tests/inner_loop_budget.py): a test that is not marked slow and spends more CPU than it
is marked over the budget and listed at the end, not failed (a busy machine stretches CPU seconds too: issue 78);
NCUCAMPAIGN_TEST_CPU_BUDGET_FAILS=1 fails it; the same test marked slow is neither."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import inner_loop_budget
from tests.conftest import ROOT


def burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def _called(monkeypatch: pytest.MonkeyPatch, slow: bool, fails: str | None) -> SimpleNamespace:
    item = SimpleNamespace(
        get_closest_marker=lambda name: object() if slow and name == "slow" else None, user_properties=[]
    )
    with monkeypatch.context() as patched:  # the default's 2 s, scaled down to stay cheap
        patched.setenv("NCUCAMPAIGN_TEST_CPU_BUDGET_S", "0.05")
        if fails is None:
            patched.delenv(inner_loop_budget.FAILS, raising=False)
        else:
            patched.setenv(inner_loop_budget.FAILS, fails)
        hook = inner_loop_budget.pytest_runtest_call(item)  # type: ignore[arg-type]
        next(hook)  # the test starts
        burn(0.1)
        if fails == "1" and not slow:
            with pytest.raises(pytest.fail.Exception, match=r"took \d\.\d s of CPU \(budget 0\.05 s\): mark it slow"):
                next(hook)
        else:
            with pytest.raises(StopIteration):
                next(hook)
    return item


@pytest.mark.parametrize("slow", [False, True])
def test_a_test_over_the_budget_is_marked_unless_slow_and_passes(monkeypatch: pytest.MonkeyPatch, slow: bool) -> None:
    item = _called(monkeypatch, slow, fails=None)
    marked = [value for key, value in item.user_properties if key == inner_loop_budget.OVER]
    assert (marked and marked[0] >= 0.1) if not slow else not marked


@pytest.mark.parametrize("slow", [False, True])
def test_the_budget_fails_a_test_when_asked(monkeypatch: pytest.MonkeyPatch, slow: bool) -> None:
    _called(monkeypatch, slow, fails="1")


@pytest.mark.slow  # two pytest runs of two workers each
def test_a_run_lists_the_tests_over_the_budget_at_its_end_and_passes(tmp_path: Path) -> None:
    """pytest end to end, on two workers as the inner loop runs: a test over the budget is named with its seconds in
    the closing lines, and the run exits 0; asked to, the same run fails it."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(
        "from tests_budget import pytest_runtest_call, pytest_runtest_logreport, write_over_budget  # noqa\n"
        "def pytest_terminal_summary(terminalreporter):\n    write_over_budget(terminalreporter)\n"
    )
    (tests / "test_costly.py").write_text(
        textwrap.dedent(
            """
            import time

            def test_costly():
                end = time.process_time() + 0.2
                while time.process_time() < end:
                    pass

            def test_cheap():
                pass
            """
        )
    )
    (tmp_path / "tests_budget.py").write_text((ROOT / "tests" / "inner_loop_budget.py").read_text())
    env = {
        "PATH": "/usr/bin:/bin",
        "NCUCAMPAIGN_TEST_CPU_BUDGET_S": "0.1",
        "PYTHONPATH": str(tmp_path),
        "TMPDIR": str(tmp_path),  # its pytest's own folders: in this test's, not /tmp
    }
    argv = [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-q", "tests"]
    listed = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    lines = listed.stdout.splitlines()
    start = next(n for n, line in enumerate(lines) if "1 over the inner loop's CPU budget" in line)
    named = [line.split()[-1] for line in lines[start + 1 :] if " s  tests/" in line]
    assert named == ["tests/test_costly.py::test_costly"], listed.stdout
    failed = subprocess.run(
        argv, cwd=tmp_path, env={**env, inner_loop_budget.FAILS: "1"}, capture_output=True, text=True, timeout=120
    )
    assert failed.returncode == 1 and "1 failed, 1 passed" in failed.stdout, failed.stdout + failed.stderr
