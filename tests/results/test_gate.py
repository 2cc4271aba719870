"""compare's verdicts per target: samples are a target's results in its first result's
launch state; durations by the rank test, launch state and near-deterministic values exactly."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ncucampaign.execute.rundir.result_records import MetricValue, ResultRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.results.gate.compare import compare_runs
from ncucampaign.results.gate.report import gate_verdict
from ncucampaign.results.gate.samples import target_verdicts
from ncucampaign.results.gate.verdicts import pooled
from ncucampaign.results.metrics import CYCLES, DURATION, REGISTERS, SM_FREQUENCY
from tests.conftest import campaign_text, fake_env, run_cli
from tests.manifests import manifest_with, target_record


def results(
    seed: int, n: int, scale: float = 1.0, grid: int = 1024, registers: int = 32, clock: float = 1.98e9
) -> list[ResultRecord]:
    rng = random.Random(seed)
    made = []
    for index in range(n):
        cycles = round(rng.gauss(5940 * scale, 5940 * 0.037))
        metrics = {
            DURATION: MetricValue(value=round(cycles / clock * 1e9 / 32) * 32, unit="ns"),
            CYCLES: MetricValue(value=cycles, unit="cycle"),
            SM_FREQUENCY: MetricValue(value=clock, unit="Hz"),
            REGISTERS: MetricValue(value=registers, unit="register/thread"),
        }
        made.append(
            ResultRecord(index=index, kernel="k", demangled="k", workload="kernel", grid=[grid, 1, 1],
                         block=[128, 1, 1], nvtx=["decode_step/"], metrics=metrics)
        )  # fmt: skip
    return made


def verdicts_of(a: list[ResultRecord], b: list[ResultRecord]) -> dict[str, str]:
    found = target_verdicts(target_record("t", results=a), target_record("t", results=b))
    return {v.metric: f"{v.verdict.value} {v.reason}" for v in found}


def test_samples_of_the_same_workload_are_the_same() -> None:
    found = verdicts_of(results(1, 32), results(2, 32))
    assert found[DURATION].startswith("SAME") and found[REGISTERS].startswith("SAME"), found


def test_a_slower_kernel_is_slower_and_a_faster_one_faster() -> None:
    assert verdicts_of(results(1, 32), results(2, 32, 1.1))[DURATION].startswith("SLOWER")
    assert verdicts_of(results(1, 32, 1.1), results(2, 32))[DURATION].startswith("FASTER")


def test_another_launch_state_is_changed_and_only_its_duration_is_tested() -> None:
    found = verdicts_of(results(1, 32), results(2, 32, grid=512))
    assert list(found) == ["launch", DURATION], found  # not the registers: another kernel's differ by nature
    assert found["launch"].startswith("CHANGED launch k grid 1024x1x1"), found
    assert found[DURATION].startswith("SAME") and found[DURATION].endswith("(its launch changed)"), found


def test_a_kernel_swapped_for_a_slower_one_fails_the_gate_with_one_sample() -> None:
    # As on the H200: the FFN knob made cuBLAS pick another GEMM kernel, 34% slower; the
    # gate passed it as CHANGED alone.
    a = results(1, 1)
    b = [r.model_copy(update={"kernel": "k2", "demangled": "k2"}) for r in results(2, 1, 1.34)]
    found = verdicts_of(a, b)
    assert found["launch"].startswith("CHANGED"), found
    assert found[DURATION].startswith("SLOWER") and "by size alone" in found[DURATION], found
    comparison = compare_runs(
        manifest_with([target_record("t", results=a)]), manifest_with([target_record("t", results=b)])
    )
    assert [v.verdict.value for v in comparison.failing()] == ["SLOWER"]


def test_results_in_other_states_are_left_out_of_the_samples() -> None:
    a = results(1, 32)
    b = results(2, 32) + results(3, 8, 2.0, grid=512)  # 8 more launches of another shape, twice as long
    (verdict,) = [v for v in target_verdicts(target_record("t", results=a), target_record("t", results=b))
                  if v.metric == DURATION]  # fmt: skip
    assert verdict.verdict.value == "SAME" and verdict.samples == (32, 32)


def test_more_registers_are_changed() -> None:
    assert verdicts_of(results(1, 32), results(2, 32, registers=40))[REGISTERS].startswith("CHANGED")


def test_at_other_clocks_the_cycles_decide() -> None:
    found = verdicts_of(results(1, 32), results(2, 32, clock=1.5e9))  # the same cycles, 32% longer
    assert found[DURATION].startswith("SAME cycles (the SM clocks differ: 1.98 GHz / 1.50 GHz)"), found


def test_a_gate_fails_on_slower_and_with_strict_on_undecided_verdicts() -> None:
    a = manifest_with([target_record("slow", results=results(1, 32)), target_record("one", results=results(3, 1))])
    b = manifest_with([target_record("slow", results=results(2, 32, 1.1)), target_record("one", results=results(4, 1))])
    comparison = compare_runs(a, b)
    assert [(v.target, v.verdict.value) for v in comparison.failing()] == [("slow", "SLOWER")]
    assert ("one", "AMBIGUOUS") in [(v.target, v.verdict.value) for v in comparison.failing(strict=True)]
    same = compare_runs(a, a)
    assert not same.failed() and same.failed(strict=True)  # "one" has one sample a side: undecided


def test_the_gate_in_one_word_is_a_failed_gates_first_failure_or_a_passed_gates_most_telling_verdict() -> None:
    a = manifest_with([target_record("slow", results=results(1, 32)), target_record("one", results=results(3, 1))])
    b = manifest_with([target_record("slow", results=results(2, 32, 1.1)), target_record("one", results=results(4, 1))])
    assert gate_verdict(compare_runs(a, b)) == "SLOWER"
    faster = manifest_with([target_record("slow", results=results(2, 32, 0.9))])
    assert (
        gate_verdict(compare_runs(manifest_with([target_record("slow", results=results(1, 32))]), faster)) == "FASTER"
    )
    assert gate_verdict(compare_runs(a, a)) == "AMBIGUOUS"  # "one" has one sample a side; "slow" is SAME
    assert gate_verdict(compare_runs(a, a), strict=True) == "AMBIGUOUS"  # ... which --strict fails on
    broke = manifest_with([target_record("slow", Status.APP_FAILED), target_record("one", results=results(4, 1))])
    assert gate_verdict(compare_runs(a, broke)) == "PROBLEM"
    assert gate_verdict(compare_runs(manifest_with([]), manifest_with([]))) == "PROBLEM"  # nothing compared


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--a", "X=1", "--b", "X=1"], "A and B are the same"),
        (["--a-file", "camp.yaml"], "A and B are the same"),
        (["--a-file", "base/camp.yaml"], "--a-file base/camp.yaml: no such campaign file"),
        (["--a", "X"], "--a 'X': expected NAME=VALUE"),
        (["--a", "X=1", "--pairs", "0"], "--pairs must be between 1 and 100"),
        # before the fix: names a campaign refuses, and variables the campaign's own env sets again
        (["--a", "1X=1"], "--a '1X=1': expected NAME=VALUE"),
        (["--a", "É=1"], "expected NAME=VALUE"),
        (["--a", "BUILD=1", "--b", "BUILD=2"], "the campaign's own env sets BUILD for t (in defaults or a target)"),
        (["--b", "KNOB=2"], "the campaign's own env sets KNOB for t"),
    ],
)
@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_ab_refuses_what_cannot_be_an_ab_comparison_before_running(
    tmp_path: Path, args: list[str], message: str
) -> None:
    targets = "- name: t\n  kernel_name: rmsnorm_kernel\n  env: {KNOB: '1'}\n"
    (tmp_path / "camp.yaml").write_text(campaign_text(targets, defaults="env: {BUILD: base}"))
    done = run_cli("ab", "camp.yaml", *args, cwd=tmp_path, env=fake_env())
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "runs").exists()


def test_pooled_runs_hold_every_runs_samples_and_keep_a_failure() -> None:
    ok = manifest_with([target_record("t", results=results(1, 4)), target_record("u", results=results(2, 4))])
    broken = manifest_with(
        [target_record("t", results=results(3, 4)), target_record("u", Status.TIMED_OUT, message="timed out")]
    )
    merged = pooled([ok, broken])
    t, u = merged.targets
    assert [r.index for r in t.results] == list(range(8)) and t.status == Status.OK
    assert u.status == Status.TIMED_OUT and u.results == []


def plan_counts(tmp_path: Path, targets: str, *extra: str) -> dict[str, str]:
    (tmp_path / "camp.yaml").write_text(campaign_text(targets))  # launch_count: 1 in its defaults
    done = run_cli("plan", "camp.yaml", "--format", "json", "--no-share", *extra, cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stderr
    invocations = json.loads(done.stdout)["invocations"]
    return {i["name"]: i["argv"][i["argv"].index("--launch-count") + 1] for i in invocations}


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_samples_are_planned_as_that_many_launches_and_run_samples_overrides_them(tmp_path: Path) -> None:
    targets = "- name: a\n  kernel_name: k\n  samples: 6\n- name: b\n  kernel_name: k\n"
    assert plan_counts(tmp_path, targets) == {"a": "6", "b": "1"}
    assert plan_counts(tmp_path, targets, "--samples", "9") == {"a": "9", "b": "9"}


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_samples_with_a_launch_count_of_several_results_is_refused(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: k\n  launch_count: 3\n  samples: 6\n"))
    done = run_cli("validate", "camp.yaml", cwd=tmp_path, env=fake_env())
    assert done.returncode == 2 and "targets[0].samples: samples takes a launch each" in done.stderr, done.stderr
    bad = run_cli("run", "camp.yaml", "--samples", "0", cwd=tmp_path, env=fake_env())
    assert bad.returncode == 2 and "--samples must be between 1 and 1000" in bad.stderr, bad.stderr


@pytest.mark.versions
@pytest.mark.slow
def test_summarize_shows_a_targets_samples_median_and_spread(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: rms\n  kernel_name: rmsnorm_kernel\n  samples: 8\n"))
    assert run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env()).returncode == 0
    done = run_cli("summarize", "runs/camp/latest", cwd=tmp_path, env=fake_env())
    manifest = json.loads(next((tmp_path / "runs" / "camp").glob("2*/manifest.json")).read_text())
    (record,) = manifest["targets"]
    assert len(record["results"]) == 8  # every sample kept
    line = next(x for x in done.stdout.splitlines() if x.startswith("rms: ") and "samples" in x)
    assert "duration median " in line and "interquartile spread " in line, done.stdout
    # before the fix: a median of 0 (an edited or damaged manifest) ended summarize with exit 70
    for result in record["results"]:
        result["metrics"]["gpu__time_duration.sum"]["value"] = 0
    path = next((tmp_path / "runs" / "camp").glob("2*/manifest.json"))
    path.write_text(json.dumps(manifest))
    zero = run_cli("summarize", "runs/camp/latest", cwd=tmp_path, env=fake_env())
    assert zero.returncode == 0 and "samples; duration median 0" in zero.stdout, zero.stdout + zero.stderr


@pytest.mark.versions
@pytest.mark.slow
def test_ab_on_a_campaign_without_a_name_compares_its_runs(tmp_path: Path) -> None:
    """Before the fix: the derived A.yaml and B.yaml named the campaign A and B, and after every pair ran ab
    looked for runs under the file's own name ('not a run directory', exit 2)."""
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: t\n  kernel_name: rmsnorm_kernel\n"))
    done = run_cli("ab", "camp.yaml", "--a", "X=1", "--b", "X=2", "--pairs", "1", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdicts:" in done.stdout
    [folder] = (tmp_path / "runs" / "camp").glob("ab-*")
    assert {p.name for p in folder.iterdir()} == {"A", "B", "A.yaml", "B.yaml"}


def test_two_ab_runs_started_in_the_same_second_get_folders_of_their_own(tmp_path: Path, monkeypatch) -> None:
    from ncucampaign.commands import ab

    monkeypatch.setattr(ab.time, "strftime", lambda _format: "ab-20261201-120000")
    first, second = ab.new_folder(tmp_path), ab.new_folder(tmp_path)
    assert (first.name, second.name) == ("ab-20261201-120000", "ab-20261201-120000-2")


@pytest.mark.slow  # ab end to end: a process of its own
def test_ab_on_another_checkouts_campaign_compares_what_both_hold_and_profiles_nothing_else(tmp_path: Path) -> None:
    """A change that removes one target and adds another: before, the gate failed ("gemm: in A, missing from B")."""
    for side, targets in (("base", ("rms", "gemm")), ("head", ("rms", "added"))):
        (tmp_path / side).mkdir()
        kernels = {"rms": "rmsnorm_kernel", "gemm": "regex:nvjet", "added": "regex:nvjet"}
        text = "".join(f"- name: {name}\n  kernel_name: {kernels[name]}\n" for name in targets)
        (tmp_path / side / "camp.yaml").write_text(campaign_text(text))
    args = ("ab", "head/camp.yaml", "--a-file", "base/camp.yaml", "--pairs", "1", "--json", "gate.json")
    done = run_cli(*args, cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not compared: gemm: only the baseline's campaign (--a-file) holds" in done.stdout
    assert "not compared: added: only the candidate's campaign holds" in done.stdout
    found = json.loads((tmp_path / "gate.json").read_text())
    assert found["gate"]["passed"] and len(found["notes"]) == 2 and found["problems"] == []
    for side in ("A", "B"):  # neither side profiled what the other could not compare
        [run] = found["runs"][side]
        assert [t["name"] for t in json.loads((Path(run) / "manifest.json").read_text())["targets"]] == ["rms"]
    (tmp_path / "head" / "camp.yaml").write_text(campaign_text("- name: other\n  kernel_name: rmsnorm_kernel\n"))
    apart = run_cli(*args, cwd=tmp_path, env=fake_env())
    assert apart.returncode == 2 and "hold no target of one name: there is nothing to compare" in apart.stderr
