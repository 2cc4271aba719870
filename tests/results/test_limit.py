"""'x of the limit' (results/limit.py): a run against one application start plus the replay of exactly
the launches its targets wanted, from what the manifest measured."""

from __future__ import annotations

import pytest

from ncucampaign.execute.rundir.manifest import AttemptRecord, ReportInfo, SharedRunRecord, TraceInfo
from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.share.cost import PER_LAUNCH_S, SECTION_S, TRACED_LAUNCH_S
from ncucampaign.results.limit import Start, launch_price, limit_line, measured_start
from tests.manifests import manifest_with, target_record

SOL = {"argv": ["ncu", "--section", "SpeedOfLight", "app"], "launch_s": SECTION_S}  # as the run priced it


def shared_run(
    name: str, kind: str, seconds: float, results: int, launch_s: float, tracer: str | None = None
) -> SharedRunRecord:
    report = ReportInfo(path=f"reports/{name}.ncu-rep", bytes=1, sha256="0", results=results, results_from="report")
    return SharedRunRecord.model_construct(
        name=name, kind=kind, status=Status.OK, seconds=seconds, report=report, argv=[], members=[], window="trace",
        launch_s=launch_s, tracer=tracer,
    )  # fmt: skip


def attempt(seconds: float, message: str = "") -> AttemptRecord:
    return AttemptRecord(number=1, started_at="", seconds=seconds, status=Status.OK, message=message)


def test_a_launch_is_priced_as_its_record_says_the_run_priced_it_never_by_its_command_line() -> None:
    assert launch_price(target_record("a", **SOL)) == SECTION_S
    assert launch_price(target_record("b", argv=["ncu", "--set", "full", "app"], launch_s=PER_LAUNCH_S["full"])) == 3.5
    assert launch_price(target_record("c", argv=["ncu", "--set", "full", "app"])) == 0.0  # an older run's record


def test_the_start_is_the_median_of_the_targets_own_runs_and_says_so() -> None:
    targets = [
        target_record("a", **SOL, attempts=[attempt(8.4)]),  # a start of 8.0 s
        target_record("b", **SOL, attempts=[attempt(6.4)]),  # 6.0 s
        target_record("c", **SOL, attempts=[attempt(0.5, "split out of shared/1")]),  # no start of its own
        target_record("miss", Status.NO_KERNELS, **SOL),  # wanted nothing that exists
    ]
    manifest = manifest_with(targets)
    manifest.ended_at = "2026-01-01T00:00:22+00:00"
    line = limit_line(manifest)
    # the median 7.0 s + 3 launches x 0.4 s = 8.2 s; 22 s is 2.7x that
    assert line == (
        "floor: this run took 22 s, 2.7x its floor of 8.2 s, the least it can take (one application start 7.0 s: the median of 2 "
        "targets' own runs, less its priced replay; + 3 wanted launches' replay 1.2 s at plan/share/cost.py's prices)"
    )


def test_a_start_is_never_below_the_least_own_run_nor_zero_and_a_trace_gives_one() -> None:
    """Before the fix: the least of every run's estimate gave 'one application start 0.0 s'; a union whose
    replay was priced above what it took drove it there."""
    targets = [target_record(n, **SOL, attempts=[attempt(0.5, "split out of shared/1")]) for n in "abc"]
    manifest = manifest_with(targets)
    union = shared_run("shared/1", "union", 3.0, 9, SECTION_S)  # 3.0 - 9 x 0.4: less than nothing
    trace = shared_run("shared/trace-1", "trace", 10.6, 223, TRACED_LAUNCH_S, tracer="ncu")
    manifest.shared_runs = [trace, union]
    manifest.ended_at = "2026-01-01T00:00:20+00:00"
    start = measured_start(manifest)
    assert start is not None and start.seconds == pytest.approx(10.6 - 223 * TRACED_LAUNCH_S)
    # the price it took off is named: a price too low for a workload shows in the line
    assert (
        start.source
        == f"the discovery trace by ncu, less its 223 traced launches at {TRACED_LAUNCH_S * 1000:.1f} ms each"
    )
    by_nsys = shared_run("shared/trace-2", "trace", 7.2, 223, 0.0, tracer="nsys")  # what its record says, not argv
    assert measured_start(manifest.model_copy(update={"shared_runs": [by_nsys, union]})) == Start(
        7.2, "the discovery trace by Nsight Systems, which replays nothing"
    )
    manifest.shared_runs = [union]  # nothing measured a start: the line says so, never 0
    assert measured_start(manifest) is None
    line = limit_line(manifest)
    assert line is not None and "no run here measured an application start, so its floor is unknown" in line
    assert "0.0 s" not in line
    own = [target_record(n, **SOL, attempts=[attempt(s)]) for n, s in (("a", 2.0), ("b", 9.0), ("c", 9.4))]
    assert measured_start(manifest_with(own)).seconds == pytest.approx(8.6)  # the median, not the least (1.6)


def test_a_miss_run_alone_is_a_whole_start_and_a_trace_stopped_at_its_bound_is_none() -> None:
    """moe_train on an H100: the trace held its 2,000-launch bound (ncu killed the application there) after 33.9 s,
    and the line took 33.9 s less 2,000 x 11 ms = 11.9 s for a start, beside a misspelt target's own run that ran
    the whole application under ncu and profiled nothing in 20.0 s."""
    members = [target_record(n, **SOL, attempts=[attempt(1.0, "split out of shared/1")]) for n in "ab"]
    miss = AttemptRecord(number=1, started_at="", seconds=20.0, status=Status.NO_KERNELS, message="no kernels ...")
    manifest = manifest_with([*members, target_record("misspelt", Status.NO_KERNELS, **SOL, attempts=[miss])])
    trace = shared_run("shared/trace-1", "trace", 33.9, 2000, TRACED_LAUNCH_S, tracer="ncu")
    trace.trace = TraceInfo(report="trace.ncu-rep", key="k", launches=2000, reused=False, seconds=33.9)
    union = shared_run("shared/1", "union", 35.0, 36, SECTION_S)
    manifest.shared_runs = [trace, union]
    assert measured_start(manifest) == Start(20.0, "a target's own run, less its priced replay")
    manifest.targets = members  # without the miss: not the trace at its bound, the shared run
    assert measured_start(manifest) == Start(
        pytest.approx(35.0 - 36 * SECTION_S), "a shared run, less its priced replay"
    )
    by_nsys = shared_run("shared/trace-2", "trace", 30.1, 2000, 0.0, tracer="nsys")  # ran on, kept its first 2,000
    by_nsys.trace = trace.trace.model_copy(update={"tracer": "nsys", "launch_s": 0.0})
    assert measured_start(manifest.model_copy(update={"shared_runs": [by_nsys, union]})) == Start(
        30.1, "the discovery trace by Nsight Systems, which replays nothing"
    )
    trace.trace = trace.trace.model_copy(update={"launches": 4000})  # it ended before its bound: the application's end
    start = measured_start(manifest)
    assert start is not None and start.seconds == pytest.approx(33.9 - 2000 * TRACED_LAUNCH_S)
    assert start.source.startswith("the discovery trace by ncu")


def test_a_run_that_profiled_nothing_or_did_not_end_has_no_limit_line() -> None:
    nothing = manifest_with([target_record("miss", Status.NO_KERNELS, **SOL, attempts=[attempt(7.0)])])
    nothing.ended_at = "2026-01-01T00:00:09+00:00"
    assert limit_line(nothing) is None
    running = manifest_with([target_record("a", **SOL, attempts=[attempt(8.4)])])
    assert limit_line(running) is None


def test_a_run_faster_than_the_priced_replay_says_so_instead_of_a_fraction() -> None:
    # The fake ncu replays at once: a run of 0.4 s against a limit of 1.6 s priced for 4 launches once
    # read "took 0 s, 0.0x its limit".
    targets = [target_record(n, **SOL, attempts=[attempt(0.1, "split out of shared/1")]) for n in "abcd"]
    manifest = manifest_with(targets)
    manifest.shared_runs = []
    manifest.targets[0].attempts = [attempt(0.3)]  # a start measured at 0.3 - 0.4 -> 0.0 s
    manifest.ended_at = "2026-01-01T00:00:00.400000+00:00"
    line = limit_line(manifest)
    assert line is not None and line.startswith("floor: this run took 0.4 s; no run here measured an application start")
    assert "0.0x" not in line and "0.0 s" not in line
    manifest.targets[0].attempts = [attempt(0.5)]  # a start of 0.1 s measured
    line = limit_line(manifest)
    assert line is not None and line.startswith("floor: this run took 0.4 s, less than its estimated floor of 1.7 s")
    assert "at plan/share/cost.py's prices, above what this machine took" in line


def test_a_run_stamped_in_whole_seconds_claims_no_tenths() -> None:
    """A run's stamps are whole seconds: a fake run of 0.3 s read "this run took 0.0 s", one of 3.4 s "3.0 s"."""
    targets = [target_record(n, **SOL, attempts=[attempt(0.1, "split out of shared/1")]) for n in "abcd"]
    manifest = manifest_with(targets)
    manifest.shared_runs = []
    manifest.started_at = manifest.ended_at = "2026-01-01T00:00:00+00:00"
    line = limit_line(manifest)
    assert line is not None and line.startswith("floor: this run took under a second; no run here measured"), line
    manifest.ended_at = "2026-01-01T00:00:03+00:00"
    line = limit_line(manifest)
    assert line is not None and line.startswith("floor: this run took 3 s;"), line
    # `run` hands it its process's seconds, as the own-time line has them: the try campaign read "own time: 0.4 s of
    # this run's 0.6 s" above "floor: this run took 1 s"
    line = limit_line(manifest, 0.6)
    assert line is not None and line.startswith("floor: this run took 0.6 s;"), line


def test_a_resume_says_how_long_it_took_itself_and_prices_no_limit() -> None:
    """Before: `this run took` counted from the run's first start, the hours between its interrupt and its resume
    included, and measured them against the limit of the whole run."""
    targets = [target_record("a", **SOL, attempts=[attempt(8.4)])]
    manifest = manifest_with(targets)
    manifest.resumed = ["2026-01-01T05:00:00+00:00"]
    manifest.ended_at = "2026-01-01T05:00:12+00:00"
    assert limit_line(manifest) == (
        "floor: this resume took 12 s; a floor prices a whole run, so none is said of a resume"
    )
