"""Change points in a metric's history (results/history/changes.py), on synthetic series: what
each shape gives, and how often noise alone, or a 10% step, is flagged."""

from __future__ import annotations

import random

import pytest

from ncucampaign.results.history.changes import Point, changes, newest_confirmed

SETTING = ("NVIDIA H200", "2025.3.1.0", "base")
# observed.md (H200): 8 launches of one 3 us kernel in one run, CV 3.7%; between runs of one commit a
# further 1% here. A run holds 8 samples (`samples: 8`): with 5, a 10% step was placed at its commit in
# 939 of 1,000 series (41 one run off), noise flagged 5 of 1,000.
SPREAD = 0.037
RUN_NOISE = 0.01
SAMPLES = 8


def series(
    levels: list[float], rng: random.Random, samples: int = SAMPLES, setting: list[tuple[str, ...]] | None = None
):
    points = []
    for i, level in enumerate(levels):
        offset = rng.gauss(0, RUN_NOISE)
        values = tuple(round(level * (1 + offset + rng.gauss(0, SPREAD)), 9) for _ in range(samples))
        points.append(Point(f"r{i}", f"c{i}", setting[i] if setting else SETTING, values))
    return points


def found(points: list[Point], exact: bool = False) -> list[tuple[int, str]]:
    return [(change.at, change.verdict) for change in changes(points, exact)]


def test_a_step_up_and_a_step_down_are_found_at_their_first_commit() -> None:
    rng = random.Random(1)
    assert found(series([1.0] * 4 + [1.25] * 4, rng)) == [(4, "SLOWER")]
    assert found(series([1.0] * 5 + [0.8] * 3, rng)) == [(5, "FASTER")]


def test_noise_and_one_outlier_give_nothing() -> None:
    rng = random.Random(2)
    assert found(series([1.0] * 10, rng)) == []
    assert sum(1 for _ in range(200) if changes(series([1.0] * 4 + [1.3] + [1.0] * 5, rng))) == 0


def test_two_steps_are_two_changes() -> None:
    assert found(series([1.0] * 4 + [1.2] * 4 + [1.0] * 4, random.Random(3))) == [(4, "SLOWER"), (8, "FASTER")]


def test_a_step_at_the_newest_commit_is_unconfirmed_until_a_second_run_agrees() -> None:
    rng = random.Random(4)
    newest = changes(series([1.0] * 6 + [1.3], rng))
    assert [(c.at, c.verdict, c.direction) for c in newest] == [(6, "UNCONFIRMED", "SLOWER")]
    assert newest_confirmed(newest) is None
    assert found(series([1.0] * 6 + [1.3] * 2, rng)) == [(6, "SLOWER")]


def test_an_exact_metric_is_changed_at_the_one_commit_where_it_moved() -> None:
    points = [Point(f"r{i}", None, SETTING, (32.0 if i < 3 else 40.0,) * 3) for i in range(6)]
    assert found(points, exact=True) == [(3, "CHANGED")]


def test_a_new_setting_is_a_marker_not_a_change() -> None:
    other = ("NVIDIA H200", "2026.3.1.0", "base")
    points = series([1.0] * 4 + [1.3] * 4, random.Random(5), setting=[SETTING] * 4 + [other] * 4)
    assert found(points) == []


@pytest.mark.slow
def test_noise_alone_is_flagged_in_at_most_one_series_in_a_hundred() -> None:
    rng = random.Random(43)
    flagged = sum(1 for _ in range(1000) if changes(series([1.0] * 12, rng)))
    assert flagged <= 10, flagged


@pytest.mark.slow
def test_a_ten_percent_step_is_found_at_its_commit_in_95_series_of_a_hundred() -> None:
    rng = random.Random(44)
    right = 0
    for _ in range(1000):
        at = rng.randrange(3, 10)
        got = changes(series([1.0] * at + [1.1] * (12 - at), rng))
        right += [(c.at, c.verdict) for c in got] == [(at, "SLOWER")]
    assert right >= 950, right


def test_a_step_at_the_last_run_before_a_new_setting_is_unconfirmed() -> None:
    other = ("NVIDIA H200", "2026.3.1.0", "base")
    points = series([1.0] * 6 + [0.85] + [0.85] * 2, random.Random(6), setting=[SETTING] * 7 + [other] * 2)
    assert [(c.at, c.verdict, c.direction) for c in changes(points)] == [(6, "UNCONFIRMED", "FASTER")]
