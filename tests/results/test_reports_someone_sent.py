"""A report someone sent (made elsewhere, not by a run) gets its page and its comparison, as summarize and findings
already took it: `report X.ncu-rep` writes X.html beside it, `compare A.ncu-rep B.ncu-rep` matches their results by
kernel, launch configuration and order. A result whose collection failed is said once in findings, its rules'
errors never ranked as findings."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ncucampaign.results.findings import Finding, FindingsRead, rank, without_rule_failures
from ncucampaign.results.reading.rules import RuleResult
from tests.conftest import FIXTURES, fake_env, run_cli


def sent(tmp_path: Path, *names: str) -> list[Path]:
    copies = []
    for name, given in zip(("before", "after"), names, strict=False):
        copy = tmp_path / f"{name}.ncu-rep"
        shutil.copyfile(FIXTURES / "reports" / given, copy)
        copies.append(copy)
    return copies


@pytest.mark.slow  # the CLI end to end
def test_a_report_someone_sent_gets_its_page_beside_it(tmp_path: Path) -> None:
    """Before: exit 2, "not a run directory"."""
    (report,) = sent(tmp_path, "count3.ncu-rep")
    done = run_cli("report", str(report), cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    page = (tmp_path / "before.html").read_text()
    assert done.stdout.strip() == str(tmp_path / "before.html") and "rmsnorm_kernel" in page and "NVIDIA H200" in page


@pytest.mark.slow  # the CLI end to end
def test_two_reports_someone_sent_are_compared_result_by_result(tmp_path: Path) -> None:
    """Before: exit 2, "not a run directory"; comparing two reports of one kernel is the commonest comparison."""
    before, after = sent(tmp_path, "count3.ncu-rep", "count4.ncu-rep")
    done = run_cli("compare", str(before), str(after), cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"A: {before}" in done.stdout and f"B: {after}" in done.stdout
    assert "report: 3 results in A, 4 in B" in done.stdout and "gate: pass" in done.stdout


def rule(ordinal: int, title: str, kind: str, message: str, speedup: float | None = None) -> Finding:
    return Finding("", RuleResult(ordinal, "k", title, title, "S", title, message, kind, speedup, None, ()))


def test_a_result_whose_collection_failed_is_said_once_and_its_rules_errors_are_not_findings() -> None:
    """Before: 'Rule Launch Configuration returned an error: Metric launch__block_size not found' ranked as items
    2-4, above the real findings of the results that held metrics."""
    failed = [rule(1, t, "ERROR", f"Rule {t} returned an error: Metric launch__block_size not found") for t in "ABC"]
    real = [rule(0, "Uncoalesced", "OPT", "uncoalesced global accesses", 40.0), rule(2, "Tail", "OPT", "a tail", 5.0)]
    read = without_rule_failures(FindingsRead([real[0], *failed, real[1]]))
    assert [g.first.title for g in rank(read.found)] == ["Uncoalesced", "Tail"]
    assert read.unread == [
        "result 1 (k) holds no metrics its rules need (its collection failed?): 3 of ncu's rules could not run on it"
    ]
