"""The inner loop's budget: a test of the inner loop (not marked `slow`, `slurm`, `k8s` or `gpu`)
that spends over 2 s of CPU (its own and its child processes') fails, saying so. CPU time rather than wall time: a loaded machine stretches the
wall clock of every test alike, and the suite must pass there (docs/testing.md); the CPU a test
spends is what it costs every run of the inner loop. Loaded by tests/conftest.py."""

from __future__ import annotations

import os
import resource
from collections.abc import Generator

import pytest

OUTSIDE_THE_INNER_LOOP = ("slow", "slurm", "k8s", "gpu")  # README.md: the inner loop's -m


def budget_s() -> float:
    return float(os.environ.get("NCUCAMPAIGN_TEST_CPU_BUDGET_S", "2"))


def cpu_seconds() -> float:
    """This process's CPU time and that of its children it waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    before = cpu_seconds()
    yield  # the test's own failure, raised here, stays its failure
    spent, budget = cpu_seconds() - before, budget_s()
    if spent > budget and not any(item.get_closest_marker(name) for name in OUTSIDE_THE_INNER_LOOP):
        pytest.fail(
            f"an inner-loop test took {spent:.1f} s of CPU (budget {budget:g} s): mark it slow "
            "(pytest.mark.slow: it runs end to end) or make it cheaper",
            pytrace=False,
        )
