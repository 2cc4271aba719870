"""The inner loop's budget: a test of the inner loop (not marked `slow`, `slurm`, `k8s` or `gpu`) that spends over
2 s of CPU (its own and its child processes') is listed at the end of the run, with what it spent, and marked in its
report. CPU time rather than wall time: the CPU a test spends is what it costs every run of the inner loop.

It fails no test unless asked (NCUCAMPAIGN_TEST_CPU_BUDGET_FAILS=1): CPU seconds stretch on a busy machine too (two
partition-search tests spent 2.4-2.5 s against 2 s at load 3-4 on a machine CI had not run on), and a timing must
never fail CI or the README's test command (issue 78). Its hooks are tests/conftest.py's."""

from __future__ import annotations

import os
import resource
from collections.abc import Generator

import pytest

OUTSIDE_THE_INNER_LOOP = ("slow", "slurm", "k8s", "gpu")  # README.md: the inner loop's -m
OVER = "over_cpu_budget"  # the user property a test over its budget carries (it crosses pytest-xdist's workers)
FAILS = "NCUCAMPAIGN_TEST_CPU_BUDGET_FAILS"

over_budget: list[tuple[str, float]] = []  # (test, CPU seconds), as the reports come in


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
    if spent <= budget or any(item.get_closest_marker(name) for name in OUTSIDE_THE_INNER_LOOP):
        return
    if os.environ.get(FAILS) == "1":
        pytest.fail(
            f"an inner-loop test took {spent:.1f} s of CPU (budget {budget:g} s): mark it slow "
            "(pytest.mark.slow: it runs end to end) or make it cheaper",
            pytrace=False,
        )
    item.user_properties.append((OVER, round(spent, 2)))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Where the run's summary is written (the controller, under pytest-xdist), what each test's call reported."""
    if report.when == "call":
        over_budget.extend((report.nodeid, float(value)) for key, value in report.user_properties if key == OVER)


def summary_lines(budget: float) -> list[str]:
    return [
        f"{seconds:5.2f} s  {test}" for test, seconds in sorted(over_budget, key=lambda found: (-found[1], found[0]))
    ] + [
        f"each spent over the inner loop's {budget:g} s of CPU (on a busy machine CPU seconds stretch too): mark it "
        f"slow or make it cheaper; {FAILS}=1 fails them"
    ]


def write_over_budget(terminalreporter: pytest.TerminalReporter) -> None:
    """In the run's closing lines (tests/conftest.py's pytest_terminal_summary)."""
    if over_budget:
        terminalreporter.write_sep("-", f"{len(over_budget)} over the inner loop's CPU budget")
        for line in summary_lines(budget_s()):
            terminalreporter.write_line(line)
