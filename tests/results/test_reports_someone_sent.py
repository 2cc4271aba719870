"""A report someone sent (made elsewhere, not by a run) gets its page and its comparison, as summarize and findings
already took it: `report X.ncu-rep` writes X.html beside it, `compare A.ncu-rep B.ncu-rep` matches their results by
kernel, launch configuration and order. A result whose collection failed is said once in findings, its rules'
errors never ranked as findings."""

from __future__ import annotations

import shutil
import socket
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
    # round 7, item 9: not this machine's host, nor "ended (running)" beside "finished"
    assert "<dt>host</dt><dd>not recorded in the report</dd>" in page and "(running)" not in page
    assert socket.gethostname() not in page


@pytest.mark.slow  # the CLI end to end
def test_two_reports_someone_sent_are_compared_result_by_result(tmp_path: Path) -> None:
    """Before: exit 2, "not a run directory"; comparing two reports of one kernel is the commonest comparison."""
    before, after = sent(tmp_path, "count3.ncu-rep", "count4.ncu-rep")
    done = run_cli("compare", str(before), str(after), cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"A: {before}" in done.stdout and f"B: {after}" in done.stdout
    assert "@decode_step/layer/mlp: 1 result in A, 2 in B" in done.stdout and "gate: pass" in done.stdout


@pytest.mark.slow  # the CLI end to end
def test_two_reports_of_different_kernels_are_not_compared_by_place(tmp_path: Path) -> None:
    """Round 7, item 9: paired by place, two reports of other kernels (and GPUs) gave a gate verdict (SLOWER
    +315226%); by kernel identity they share nothing, and compare says what each holds alone."""
    before, after = sent(tmp_path, "count3.ncu-rep", "nvtx_nested.ncu-rep")
    done = run_cli("compare", str(before), str(after), "--fail-on-regression", cwd=tmp_path, env=fake_env())
    assert "only in B: cudnn_generated_fort_native_sdpa" in done.stdout, done.stdout
    assert "only in A: rmsnorm_kernel<<<(4,1,1),(128,1,1)>>> @decode_step/layer" in done.stdout
    assert "SLOWER" not in done.stdout and "FASTER" not in done.stdout and "no values were compared" in done.stdout
    assert done.returncode == 1


def test_a_kernel_both_reports_hold_is_paired_with_itself_whatever_its_place() -> None:
    """`basic` against `one_blocktiling` once gave FASTER -96% while the kernel both files held was never compared."""
    from ncucampaign.execute.rundir.manifest import TargetRecord
    from ncucampaign.execute.rundir.result_records import MetricValue, ResultRecord
    from ncucampaign.execute.rundir.status import Status
    from ncucampaign.results.reading.records import by_identity

    def report(*kernels: tuple[str, float]) -> list[TargetRecord]:
        results = [
            ResultRecord(index=i, kernel=k, demangled=k, workload="kernel", grid=[8, 1, 1], block=[256, 1, 1],
                         metrics={"gpu__time_duration.sum": MetricValue(value=v, unit="nsecond")})
            for i, (k, v) in enumerate(kernels)
        ]  # fmt: skip
        record = TargetRecord(name="report", target="report", argv=[], shell_command="", env={}, cwd="",
                              timeout_s=0, retries=0, expected_results=None, status=Status.OK, results=results, log="",
                              collects_sections=True)  # fmt: skip
        return by_identity(record)

    a = {t.name: t for t in report(("basic", 1000.0), ("one_blocktiling", 40.0))}
    b = {t.name: t for t in report(("one_blocktiling", 41.0))}
    (shared,) = set(a) & set(b)
    assert shared.startswith("one_blocktiling<<<(8,1,1),(256,1,1)>>>")
    assert a[shared].results[0].value("gpu__time_duration.sum") == 40.0 and set(a) - set(b) == {
        "basic<<<(8,1,1),(256,1,1)>>>"
    }


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
