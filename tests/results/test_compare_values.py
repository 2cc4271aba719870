"""compare on values a damaged or foreign manifest may hold: a NaN sample is no measurement,
and a duration in `us` is the same quantity as one in `ns`."""

from __future__ import annotations

import json
import math

from ncucampaign.execute.rundir.result_records import MetricValue, ResultRecord
from ncucampaign.results.gate.compare import Comparison, compare_runs
from ncucampaign.results.gate.verdicts import Verdict
from ncucampaign.results.metrics import DURATION
from ncucampaign.results.tables.tables import comparison_json
from tests.manifests import manifest_with, target_record


def samples(values: list[float], unit: str = "ns") -> list[ResultRecord]:
    return [
        ResultRecord(index=i, kernel="k", demangled="k", workload="kernel", grid=[8, 1, 1], block=[128, 1, 1],
                     metrics={DURATION: MetricValue(value=v, unit=unit)})
        for i, v in enumerate(values)
    ]  # fmt: skip


BASE = [3000.0, 3032.0, 2968.0, 3064.0, 3000.0, 2936.0, 3032.0, 3000.0]


def comparison(a: list[ResultRecord], b: list[ResultRecord]) -> Comparison:
    return compare_runs(manifest_with([target_record("t", results=a)]), manifest_with([target_record("t", results=b)]))


def test_a_nan_sample_is_left_out_and_a_50_percent_slowdown_stays_slower() -> None:
    slower = [1.5 * v for v in BASE]
    found = comparison(samples(BASE), samples([math.nan, *slower[1:]]))
    [verdict] = [v for v in found.verdicts if v.metric == DURATION]
    assert verdict.verdict == Verdict.SLOWER, verdict
    assert verdict.shift is not None and 0.45 < verdict.shift < 0.55
    assert "1 of B left out: not a finite number" in verdict.reason
    assert found.failed() and found.failed(strict=True)
    text = comparison_json(found)
    assert "NaN" not in text and json.loads(text)["failing"] == 1
    assert any("not a finite number in B; not compared" in note for note in found.notes)


def test_durations_in_us_are_converted_not_read_as_a_99_percent_speedup() -> None:
    found = comparison(samples(BASE), samples([v * 1.5 / 1000 for v in BASE], unit="us"))
    [verdict] = [v for v in found.verdicts if v.metric == DURATION]
    assert verdict.verdict == Verdict.SLOWER and abs(verdict.shift - 0.5) < 0.05, verdict
    change = found.changes[0]
    assert change.unit == "ns" and abs(change.after - 1.5 * BASE[0]) < 1e-6 and abs(change.relative - 0.5) < 1e-9


def test_units_that_do_not_convert_are_refused_and_fail_the_gate() -> None:
    found = comparison(samples(BASE), samples(BASE, unit="pass"))
    assert not [v for v in found.verdicts if v.metric == DURATION]
    assert found.failed() and any("units that do not convert" in p for p in found.problems), found.problems


def test_units_are_read_as_ncu_writes_them() -> None:
    from ncucampaign.results.units import base_unit

    assert base_unit("ns") == (1e-9, "second") and base_unit("usecond") == (1e-6, "second")
    assert base_unit("Kbyte") == (1e3, "byte") and base_unit("Gbyte/second") == (1e9, "byte/second")
    assert base_unit("Mhz") == (1e6, "hz") and base_unit("%") == (1.0, "%") and base_unit("pass") == (1.0, "pass")


def test_a_verdict_table_of_thousands_of_targets_shows_forty_of_each_verdict_those_that_moved_most() -> None:
    """Before the fix: compare of a 20,000-target run spent 12-15 s drawing 20,000 AMBIGUOUS rows, and where every
    value moved, 72 s and 1.67 GB drawing 20,000 CHANGED rows too."""
    from ncucampaign.results.gate.samples import TargetVerdict
    from ncucampaign.results.gate.tables import MAX_ROWS, verdict_table

    undecided = tuple(
        TargetVerdict(f"t{i}", DURATION, Verdict.AMBIGUOUS, "one sample a side", (1, 1)) for i in range(1000)
    )
    slower = tuple(
        TargetVerdict(f"s{i}", DURATION, Verdict.SLOWER, "beyond the threshold", (8, 8), shift=i / 100)
        for i in range(100)
    )
    table = verdict_table((*undecided, *slower), every=False)
    assert table.row_count == 2 * MAX_ROWS == 80  # forty SLOWER, then forty AMBIGUOUS
    assert "60 more SLOWER and 960 more AMBIGUOUS not shown (--all shows them)" in str(table.caption)
    first = list(table.columns[0].cells)
    assert first[:2] == ["s99", "s98"] and first[MAX_ROWS] == "t0"  # worst first, the largest moves first
    assert verdict_table((*undecided, *slower), every=True).row_count == 1100


def test_counts_in_notes_are_said_in_words_that_agree() -> None:
    """Before the fix: '1 results in A, 0 in B'."""
    notes = comparison(samples([10.0]), []).notes
    assert any(note.startswith("t: 1 result in A, 0 in B;") for note in notes), notes


def test_a_metric_neither_run_holds_is_offered_the_names_they_do() -> None:
    """Before the fix: the hint's example was the name typed."""
    a = manifest_with([target_record("t", results=samples([10.0]))])
    (problem,) = [p for p in compare_runs(a, a, metrics=("gpu__time_duration.summ",)).problems if "--metric" in p]
    assert (
        problem
        == "--metric gpu__time_duration.summ: neither run holds this metric; did you mean gpu__time_duration.sum?"
    )
