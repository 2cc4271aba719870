"""Counting results in real .ncu-rep reports with NVIDIA's ncu_report (the `reports` extra)."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

from ncucampaign.errors import ReportUnreadable
from ncucampaign.results.reading.reader import read_results

pytest.importorskip("ncu_report", reason="the ncu-report wheel (pip install ncucampaign[reports])")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
with open(FIXTURES / "cases.tsv") as _cases:  # sig_TERM has no count
    PROFILED = {row["case"]: int(row["profiled"]) for row in csv.DictReader(_cases, delimiter="\t") if row["profiled"]}


@pytest.mark.parametrize("report", sorted(p.name for p in (FIXTURES / "reports").glob("*.ncu-rep")))
def test_result_count_matches_what_ncu_profiled(report: str) -> None:
    assert len(read_results(FIXTURES / "reports" / report)) == PROFILED[report.removesuffix(".ncu-rep")]


def test_a_missing_report_is_unreadable_and_junk_holds_nothing(tmp_path: Path) -> None:
    with pytest.raises(ReportUnreadable, match=r"missing\.ncu-rep"):
        read_results(tmp_path / "missing.ncu-rep")
    junk = tmp_path / "junk.ncu-rep"
    junk.write_bytes(b"not a report")
    assert read_results(junk) == []  # ncu_report reads junk as an empty report; the runner treats 0 as damaged


@pytest.mark.parametrize("damage", ["truncated", "bit-flipped"])
def test_a_damaged_report_is_unreadable_never_a_result_without_a_name(tmp_path: Path, damage: str) -> None:
    """Before the fix: ncu_report loads a damaged report and answers None for names; that used to reach
    the manifest (a validation error, exit 70)."""
    data = (FIXTURES / "reports" / "name_exact.ncu-rep").read_bytes()
    if damage == "truncated":
        damaged = data[: len(data) // 2]
    else:
        flipped, chance = bytearray(data), random.Random(1)
        for _ in range(20):
            flipped[chance.randrange(len(flipped))] ^= 1 << chance.randrange(8)
        damaged = bytes(flipped)
    report = tmp_path / "damaged.ncu-rep"
    report.write_bytes(damaged)
    with pytest.raises(ReportUnreadable, match=r"damaged\.ncu-rep"):
        read_results(report)
