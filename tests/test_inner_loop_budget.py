"""The inner loop's budget (tests/inner_loop_budget.py) fails a test that is not marked slow and
spends more CPU than it, and lets the same test pass when marked slow."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from tests import inner_loop_budget


def burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


@pytest.mark.parametrize("slow", [False, True])
def test_a_test_over_the_budget_fails_unless_marked_slow(monkeypatch: pytest.MonkeyPatch, slow: bool) -> None:
    item = SimpleNamespace(get_closest_marker=lambda name: object() if slow and name == "slow" else None)
    with monkeypatch.context() as patched:  # the default's 2 s, scaled down to stay cheap
        patched.setenv("NCUCAMPAIGN_TEST_CPU_BUDGET_S", "0.05")
        hook = inner_loop_budget.pytest_runtest_call(item)  # type: ignore[arg-type]
        next(hook)  # the test starts
        burn(0.1)
        if slow:
            with pytest.raises(StopIteration):
                next(hook)
        else:
            with pytest.raises(pytest.fail.Exception, match=r"took \d\.\d s of CPU \(budget 0\.05 s\): mark it slow"):
                next(hook)
