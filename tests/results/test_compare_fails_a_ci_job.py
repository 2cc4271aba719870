"""compare's CI gate fails on what a CI job must know: targets gone, failed or no longer comparable."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncucampaign.execute.rundir.status import Status
from ncucampaign.results.metrics import DURATION
from tests.conftest import run_cli
from tests.manifests import manifest_with, target_record


def write_run(folder: Path, targets: list) -> Path:
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(manifest_with(targets).model_dump_json())
    return folder


def result(duration: float) -> dict:
    return {"index": 0, "kernel": "k", "demangled": "k", "workload": "kernel",
            "metrics": {DURATION: {"value": duration, "unit": "nsecond"}}}  # fmt: skip


@pytest.mark.slow  # runs the CLI end to end
@pytest.mark.parametrize(
    ("b_targets", "metric", "problem"),
    [
        (
            [target_record("a", Status.NO_KERNELS, message="filters matched nothing")],
            None,
            "a: ok in A, no_kernels in B",
        ),
        ([target_record("z", results=[result(100)])], None, "a: in A, missing from B"),
        ([target_record("a", results=[result(100)])], "dram__bytes.sum", "--metric dram__bytes.sum: neither run"),
    ],
    ids=["no-longer-ok", "missing-and-nothing-compared", "unknown-metric"],
)
def test_compare_fails_on_what_a_ci_job_must_know(tmp_path: Path, b_targets: list, metric, problem: str) -> None:
    run_a = write_run(tmp_path / "a", [target_record("a", results=[result(100)])])
    run_b = write_run(tmp_path / "b", b_targets)
    extra = ("--metric", metric) if metric else ()
    done = run_cli("compare", str(run_a), str(run_b), "--fail-on-regression", *extra, cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert problem in done.stdout
    clean = run_cli("compare", str(run_a), str(run_a), "--fail-on-regression", cwd=tmp_path)
    # One sample a side decides nothing: AMBIGUOUS, which fails a gate only with --strict.
    assert clean.returncode == 0 and "1 value compared, 0 flagged; verdicts: 1 AMBIGUOUS; 0 problems" in clean.stdout
    strict = run_cli("compare", str(run_a), str(run_a), "--fail-on-regression", "--strict", cwd=tmp_path)
    assert strict.returncode == 1 and "5 a side can" in strict.stdout, strict.stdout
