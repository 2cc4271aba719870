"""'x of the limit' (results/limit.py): a run against one application start plus the replay of exactly
the launches its targets wanted, from what the manifest measured."""

from __future__ import annotations

from ncucampaign.execute.rundir.manifest import AttemptRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.share.cost import PER_LAUNCH_S, SECTION_S
from ncucampaign.results.limit import launch_price, limit_line
from tests.test_results_helpers import manifest_with, target_record

SOL = ["ncu", "--section", "SpeedOfLight", "app"]


def attempt(seconds: float, message: str = "") -> AttemptRecord:
    return AttemptRecord(number=1, started_at="", seconds=seconds, status=Status.OK, message=message)


def test_a_launch_is_priced_by_what_the_command_line_collects() -> None:
    assert launch_price(SOL) == SECTION_S
    assert launch_price(["ncu", "--set", "full", "app"]) == PER_LAUNCH_S["full"]
    assert launch_price(["ncu", "--metrics", "gpu__time_duration.sum", "app"]) < SECTION_S


def test_the_limit_is_the_least_measured_start_plus_the_wanted_replay() -> None:
    targets = [
        target_record("a", argv=SOL, attempts=[attempt(8.4)]),  # a start of 8.0 s
        target_record("b", argv=SOL, attempts=[attempt(6.4)]),  # 6.0 s: the least
        target_record("c", argv=SOL, attempts=[attempt(0.5, "split out of shared/1")]),  # no start of its own
        target_record("miss", Status.NO_KERNELS, argv=SOL),  # wanted nothing that exists
    ]
    manifest = manifest_with(targets)
    manifest.ended_at = "2026-01-01T00:00:22+00:00"
    line = limit_line(manifest)
    # 6.0 s + 3 launches x 0.4 s = 7.2 s; 22 s is 3.1x that
    assert line == (
        "limit: this run took 22 s, 3.1x its limit of 7.2 s (one application start 6.0 s, the least any run "
        "here measured, + 3 wanted launches' replay 1.2 s)"
    )


def test_a_run_that_profiled_nothing_or_did_not_end_has_no_limit_line() -> None:
    nothing = manifest_with([target_record("miss", Status.NO_KERNELS, argv=SOL, attempts=[attempt(7.0)])])
    nothing.ended_at = "2026-01-01T00:00:09+00:00"
    assert limit_line(nothing) is None
    running = manifest_with([target_record("a", argv=SOL, attempts=[attempt(8.4)])])
    assert limit_line(running) is None


def test_a_run_faster_than_the_priced_replay_says_so_instead_of_a_fraction() -> None:
    # The fake ncu replays at once: a run of 0.4 s against a limit of 1.6 s priced for 4 launches once
    # read "took 0 s, 0.0x its limit".
    targets = [target_record(n, argv=SOL, attempts=[attempt(0.1, "split out of shared/1")]) for n in "abcd"]
    manifest = manifest_with(targets)
    manifest.shared_runs = []
    manifest.targets[0].attempts = [attempt(0.3)]  # a start measured at 0.3 - 0.4 -> 0.0 s
    manifest.ended_at = "2026-01-01T00:00:00.400000+00:00"
    line = limit_line(manifest)
    assert line is not None and line.startswith("limit: this run took 0.4 s, less than its estimated limit of 1.6 s")
    assert "at plan/share/cost.py's prices, above what this machine took" in line and "0.0x" not in line
