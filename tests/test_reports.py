"""Counting results in real .ncu-rep reports with NVIDIA's ncu_report (the `reports` extra)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ncucampaign.results.reader import count_results

pytest.importorskip("ncu_report", reason="the ncu-report wheel (pip install ncucampaign[reports])")

FIXTURES = Path(__file__).resolve().parent / "fixtures"
with open(FIXTURES / "cases.tsv") as _cases:  # sig_TERM has no count
    PROFILED = {row["case"]: int(row["profiled"]) for row in csv.DictReader(_cases, delimiter="\t") if row["profiled"]}


@pytest.mark.parametrize("report", sorted(p.name for p in (FIXTURES / "reports").glob("*.ncu-rep")))
def test_result_count_matches_what_ncu_profiled(report: str) -> None:
    assert count_results(FIXTURES / "reports" / report) == PROFILED[report.removesuffix(".ncu-rep")]


def test_unreadable_or_missing_report_counts_as_unknown_or_empty(tmp_path: Path) -> None:
    assert count_results(tmp_path / "missing.ncu-rep") is None
    junk = tmp_path / "junk.ncu-rep"
    junk.write_bytes(b"not a report")
    assert count_results(junk) == 0
