"""What compare says of many targets in the same words is one line (results/gate/folding.py)."""

from __future__ import annotations

from ncucampaign.results.gate.folding import LISTED, folded_lines, largest


def test_the_same_words_of_three_targets_are_one_line_where_the_first_was() -> None:
    clock = "SM frequency 1.47 GHz in A, 1.62 GHz in B; durations are not comparable"
    lines = [
        "warning: a[0]: " + clock,
        "b: failed in run B",
        "warning: b[0]: " + clock,
        "warning: c[1]: " + clock,
        "c: failed in run B",
    ]
    assert folded_lines(lines) == [f"warning: {clock} (a[0], b[0], c[1])", "b: failed in run B", "c: failed in run B"]


def test_lines_that_do_not_name_a_target_are_kept_as_they_are() -> None:
    lines = ["no name here"] * 3 + ["warning: ncu 2025.3.1 in A, 2026.1 in B"] * 3
    assert folded_lines(lines) == lines


def test_the_largest_are_kept_in_their_order() -> None:
    sizes = [float(n % 7) for n in range(100)]
    kept, left = largest(len(sizes), sizes, every=False)
    assert len(kept) == LISTED and left == 100 - LISTED and kept == sorted(kept)
    assert min(sizes[i] for i in kept) >= max(sizes[i] for i in range(100) if i not in kept)
    assert largest(len(sizes), sizes, every=True) == (list(range(100)), 0)
