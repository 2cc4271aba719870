"""Classifying attempts from real ncu 2025.3.1 console logs (tests/fixtures/logs, copied from real ncu
runs; docs/ncu-behaviour.md) with the exit codes measured for them (cases.tsv)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from ncucampaign.execute.attempt.classify import classify_attempt, parse_console
from ncucampaign.execute.rundir.status import Status

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
with open(FIXTURES / "cases.tsv") as _cases:
    CASES = {row["case"]: row for row in csv.DictReader(_cases, delimiter="\t")}

EXPECTED = {
    "name_exact": Status.OK,
    "regex_skip_kill": Status.OK,
    "demangled": Status.OK,
    "nvtx_nested": Status.OK,
    "nvtx_rangefilter": Status.OK,
    "rangefilter_multi": Status.OK,
    "profiler_api": Status.OK,
    "pystack": Status.OK,
    "children_all": Status.OK,
    "children_kill": Status.OK,
    "graph_node": Status.OK,
    "graph_graph": Status.OK,
    "full_one": Status.OK,
    "discover_metric": Status.OK,
    "nomatch": Status.NO_KERNELS,
    "nvtx_noslash": Status.NO_KERNELS,
    "missing_nvtx_flag": Status.USAGE_ERROR,
    "app_fails": Status.APP_FAILED,
    "app_crash": Status.APP_FAILED,
    "bad_option": Status.USAGE_ERROR,
    "bad_section": Status.USAGE_ERROR,
    "bad_regex": Status.USAGE_ERROR,
    "missing_app": Status.APP_FAILED,
    "missing_exe": Status.USAGE_ERROR,
    "sig_TERM": Status.PROFILER_ERROR,
}


def classify_case(case: str):
    row = CASES[case]
    console = parse_console((FIXTURES / "logs" / f"{case}.log").read_text())
    count = re.search(r"--launch-count (\d+)", row["command"] or "")
    return console, classify_attempt(
        exit_code=int(row["rc"]),
        console=console,
        report_exists=bool(console.report_paths) or row["report_bytes"] not in ("", "-"),
        results=int(row["profiled"] or 0),
        expected=int(count.group(1)) if count else None,
    )


def test_every_fixture_case_has_an_expectation() -> None:
    imports = {case for case, row in CASES.items() if (row["command"] or "").startswith("ncu --import")}
    assert {"split_export", "count3"} <= imports  # --import runs, not profiling attempts
    assert set(EXPECTED) == set(CASES) - imports


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_fixture_log_is_classified(case: str) -> None:
    _, verdict = classify_case(case)
    assert verdict.status == EXPECTED[case], verdict.message


@pytest.mark.parametrize(
    ("case", "retryable"),
    [
        ("app_fails", True),
        ("app_crash", True),
        ("bad_option", False),
        ("nomatch", False),
        ("sig_TERM", True),
        ("missing_app", False),
    ],  # the interpreter cannot open the script: a second attempt meets the same
)
def test_retry_follows_the_class(case: str, retryable: bool) -> None:
    assert classify_case(case)[1].retryable is retryable


def test_console_summary_of_a_miss() -> None:
    console, verdict = classify_case("nomatch")
    assert console.no_kernels and console.profiled == 0
    assert len(console.available_kernels) == 15
    assert console.available_kernels[11] == "rmsnorm_kernel"
    assert "no kernels were profiled" in verdict.message


def test_nvtx_no_slash_note_is_seen() -> None:
    console, _ = classify_case("nvtx_noslash")
    assert console.nvtx_start_end_note and not console.available_kernels


def test_results_counted_and_messages() -> None:
    console, verdict = classify_case("rangefilter_multi")
    assert console.profiled == 8 and verdict.message == "8 results"
    console, verdict = classify_case("discover_metric")
    assert console.profiled == 26  # "- N:" numbered lines count too
    crash = classify_case("app_crash")[1]
    assert "error code 6 (killed by SIGABRT?)" in crash.message and "report kept" in crash.message
    assert "ncu ended by SIGTERM (exit code 143)" in classify_case("sig_TERM")[1].message
    assert classify_case("children_kill")[0].shutdown_requested


def test_too_few_results_is_incomplete() -> None:
    console = parse_console((FIXTURES / "logs" / "demangled.log").read_text())
    verdict = classify_attempt(exit_code=0, console=console, report_exists=True, results=2, expected=3)
    assert verdict.status == Status.INCOMPLETE and not verdict.retryable


def test_exit_zero_without_a_report_is_a_profiler_error() -> None:
    console = parse_console((FIXTURES / "logs" / "name_exact.log").read_text())
    verdict = classify_attempt(exit_code=0, console=console, report_exists=False, results=None, expected=1)
    assert verdict.status == Status.PROFILER_ERROR and verdict.retryable


def test_no_ranges_profiled_is_a_miss_not_an_unreadable_report() -> None:
    """ncu 2025.3.1 under app-range replay, devices [0] on a 2-rank torchrun job (H200 x2, the ==
    lines of its log as printed): exit 0 and a report with no results, which read as profiler_error."""
    console = parse_console((FIXTURES / "logs" / "no_ranges.log").read_text())
    verdict = classify_attempt(exit_code=0, console=console, report_exists=True, results=None, expected=1)
    assert verdict.status == Status.NO_KERNELS and not verdict.retryable
    assert verdict.message.startswith("no ranges were profiled")


def test_permission_error_is_not_retried() -> None:
    console = parse_console(
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters\n"
    )
    verdict = classify_attempt(exit_code=1, console=console, report_exists=False, results=None, expected=None)
    assert verdict.status == Status.PROFILER_ERROR and not verdict.retryable


def test_timeout_and_interruption_win_over_everything() -> None:
    console = parse_console((FIXTURES / "logs" / "sig_TERM.log").read_text())
    timed = classify_attempt(
        exit_code=0, console=console, report_exists=True, results=1, expected=1, timed_out=True, timeout_s=30
    )
    assert timed.status == Status.TIMED_OUT and "after 30 s" in timed.message and "report kept" in timed.message
    stopped = classify_attempt(
        exit_code=0, console=console, report_exists=False, results=None, expected=1, interrupted=True
    )
    assert stopped.status == Status.INTERRUPTED and not stopped.retryable


def test_a_marker_after_unfinished_application_output_still_counts() -> None:
    text = (
        '==PROF== Profiling "k": 0%....50%....100% - 10 passes\n'
        '[app] done steps=12==PROF== Profiling "k": 0%....50%....100% - 10 passes\n'
        "[app] half a line==ERROR== The application returned an error code (3).\n"
        "==PROF== Report: /r/x.ncu-rep\n"
    )
    console = parse_console(text)
    assert console.profiled == 2
    assert console.app_exit_code == 3
    assert console.report_paths == ("/r/x.ncu-rep",)


@pytest.mark.parametrize(
    ("output", "code", "cannot_start"),
    [
        ((FIXTURES / "logs" / "missing_app.log").read_text(), 2, True),  # the interpreter cannot open the script
        ("sh: 1: nosuchcmd: not found\n==ERROR== The application returned an error code (127).\n", 127, True),
        ("bash: ./run.sh: No such file or directory\n==ERROR== The application returned an error code (127).\n", 127, True),
        ("bash: ./run.sh: Permission denied\n==ERROR== The application returned an error code (126).\n", 126, True),
        # it started: a missing input file ends a traceback; "started" came before the exit 127
        ("Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n"
         "FileNotFoundError: [Errno 2] No such file or directory: 'weights.bin'\n"
         "==ERROR== The application returned an error code (1).\n", 1, False),
        ("started\n==ERROR== The application returned an error code (127).\n", 127, False),
    ],
)  # fmt: skip
def test_cannot_start_is_said_only_of_an_application_that_never_started(
    output: str, code: int, cannot_start: bool
) -> None:
    """Before: an application that ran and then failed (a missing input file, an exit 127 after it printed)
    was closed "the application cannot start", its retries unused and every other target closed unstarted."""
    console = parse_console(output)
    verdict = classify_attempt(exit_code=code, console=console, report_exists=False, results=None, expected=1)
    assert verdict.status == Status.APP_FAILED
    assert ("the application cannot start" in verdict.message) == cannot_start and verdict.retryable != cannot_start
