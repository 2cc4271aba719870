"""Baselines in git: `reference update` writes one file per GPU model, deterministically,
and `compare RUN --reference DIR` judges a run against it as against a run A."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from ncucampaign.errors import EXIT_NOT_COMPARABLE
from ncucampaign.results.history.reference import file_name, moved, moved_markdown, not_comparable, rounded
from ncucampaign.results.history.reference_file import Reference, ReferenceMetric, problem
from tests.conftest import ROOT, checkout_in


def test_values_are_rounded_to_five_figures_and_whole_numbers_stay_whole() -> None:
    assert rounded(3144912345) == 3144900000 and isinstance(rounded(3144912345), int)
    assert rounded(0.000123456789) == 0.00012346 and rounded(2.5) == 2.5 and rounded(0) == 0
    assert file_name("NVIDIA H200") == "NVIDIA-H200.yaml" and file_name("A100-SXM4 (80GB)") == "A100-SXM4-80GB.yaml"


def test_a_gpu_model_without_a_letter_or_digit_is_no_hidden_file() -> None:
    """Before the fix: a model of "" or "..." wrote refs/.yaml."""
    assert file_name("") == file_name("...") == file_name(" - ") == "unknown-GPU.yaml"


def metric_problem(entry: object) -> str | None:
    """What is wrong with one metric of a reference, as `key: why`; None when it is what the format says."""
    try:
        ReferenceMetric.model_validate(entry)
    except ValidationError as exc:
        return problem(exc.errors()[0])
    return None


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"samples": [10**400]}, "samples[0]: "),  # exit 70 (OverflowError) before the fix
        ({"samples": [True, False, True]}, "samples[0]: 'True' is not a finite number"),  # "SLOWER +288000%"
        ({"samples": [float("nan")]}, "samples[0]: 'nan' is not a finite number"),
        ({"median": "abc"}, "median: 'abc' is not a finite number"),
        ({"median": float("nan")}, "median: 'nan' is not a finite number"),
        ({"tolerance": [1, 2]}, "tolerance: '[1, 2]' is not a finite number"),
        ({"tolerance": -5}, "tolerance: -5 is negative"),
        ({"exact": "yes"}, "exact: 'yes' is not true or false"),
        ({"samples": []}, "samples: not a list of numbers"),
    ],
)
def test_a_reference_holds_finite_numbers_of_the_types_its_format_names(changed: dict[str, Any], said: str) -> None:
    good = {"unit": "ns", "samples": [3744, 3790], "median": 3767, "tolerance": 38}
    assert metric_problem(good) is None and metric_problem({**good, "exact": True, "tolerance": 0}) is None
    problem = metric_problem({**good, **changed})
    assert problem is not None and problem.startswith(said), problem


def ref(**targets: dict[str, Any]) -> Reference:
    return Reference.model_validate({"reference": 1, "gpu": "NVIDIA H200", "header": {}, "targets": targets})


def entry(median: float, tolerance: float | None = None, exact: bool = False) -> dict[str, Any]:
    metric: dict[str, Any] = {"median": median, "samples": [median]}
    metric.update({"exact": True} if exact else {"tolerance": tolerance or 0})
    return {"launch": {"kernel": "k"}, "metrics": {"m": metric}}


def test_what_moved_is_named_beyond_the_previous_tolerance_and_exact_values_on_any_change() -> None:
    before = ref(up=entry(100, 5), down=entry(100, 5), still=entry(100, 5), regs=entry(32, exact=True), gone=entry(1))
    after = ref(up=entry(106, 5), down=entry(90, 5), still=entry(104, 5), regs=entry(40, exact=True), fresh=entry(1))
    found = {(m.target, m.what) for m in moved(before, after)}
    assert found == {("up", "HIGHER"), ("down", "LOWER"), ("regs", "CHANGED"), ("gone", "gone"), ("fresh", "new")}
    table = moved_markdown(moved(before, after))
    assert (
        table.startswith("| target | metric | moved | before | after |") and "| up | m | HIGHER | 100 | 106 |" in table
    )
    assert moved_markdown(moved(after, after)) == "Nothing moved beyond its tolerance.\n"


def test_another_gpu_ncu_driver_or_clock_setting_is_not_comparable() -> None:
    gpu = SimpleNamespace(name="NVIDIA H200", driver_version="580.1")
    run = SimpleNamespace(
        gpus=[gpu], ncu=SimpleNamespace(version="2025.3.1.0"), targets=[SimpleNamespace(clock_control=None)],
        campaign=SimpleNamespace(name="c", sha256="s"), run_id="r", workload_git=None,
    )  # fmt: skip
    header = {"ncu": "2025.3.1.0", "driver": "580.1", "clock_control": "base"}
    same = {"reference": 1, "gpu": "NVIDIA H200", "header": header, "targets": {}}

    def against(**changed: Any) -> str | None:
        return not_comparable(Reference.model_validate({**same, **changed}), run)  # type: ignore[arg-type]

    assert against() is None
    assert "ncu version is 2025.3.1.0" in str(against(header={**header, "ncu": "2026.3.1.0"}))
    assert "driver" in str(against(header={**header, "driver": "570"}))
    assert "clock control" in str(against(header={**header, "clock_control": "none"}))
    assert "of NVIDIA A100" in str(against(gpu="NVIDIA A100"))


def shell(tmp_path: Path, script: str) -> subprocess.CompletedProcess[str]:
    setup = (
        'export PATH="$PWD/tests/fake_ncu:$PATH" FAKE_NCU_REPORTS="$PWD/tests/fixtures/reports"\n'
        f'ncucampaign() {{ PYTHONPATH={shlex.quote(str(ROOT))} {shlex.quote(sys.executable)} -m ncucampaign "$@"; }}\n'
    )
    return subprocess.run(["bash", "-c", setup + script], cwd=tmp_path, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_reference_from_three_runs_gates_a_run_as_a_run_a_would(tmp_path: Path) -> None:
    checkout_in(tmp_path, "campaigns/try.yaml", "tests/fake_ncu", "tests/fixtures/reports", "ncucampaign/spec/data")
    made = shell(tmp_path, "for i in 1 2 3; do ncucampaign run campaigns/try.yaml --samples 3 --only rmsnorm_0 mlp_gemm; done\n"
                 "ncucampaign reference update campaigns/runs/try/2*")  # fmt: skip
    refs = tmp_path / "campaigns" / "refs"
    reference = refs / "NVIDIA-H200.yaml"
    assert made.returncode == 0 and reference.is_file(), made.stdout[-2000:] + made.stderr[-2000:]
    first = reference.read_bytes()
    again = shell(tmp_path, "ncucampaign reference update campaigns/runs/try/2*")
    assert again.returncode == 0 and "(unchanged)" in again.stdout and "Nothing moved" in again.stdout
    assert reference.read_bytes() == first  # updating twice from the same runs changes no byte
    data = yaml.safe_load(first)
    assert sorted(data["targets"]) == ["mlp_gemm", "rmsnorm_0"] and len(data["header"]["runs"]) == 3
    duration = data["targets"]["rmsnorm_0"]["metrics"]["gpu__time_duration.sum"]
    launch = data["targets"]["rmsnorm_0"]["launch"]
    pooled = [  # compare's samples: the results in one launch state, the newest run's first result's
        r for m in sorted((tmp_path / "campaigns" / "runs" / "try").glob("2*/manifest.json"))
        for r in next(t for t in json.loads(m.read_text())["targets"] if t["name"] == "rmsnorm_0")["results"]
        if (r["kernel"], r["grid"], r["block"], r["nvtx"]) == (launch["kernel"], launch["grid"], launch["block"], launch["nvtx"])
    ]  # fmt: skip
    assert 3 <= len(duration["samples"]) == len(pooled) < 9 and duration["tolerance"] > 0 and duration["unit"]
    gate = "ncucampaign compare campaigns/runs/try/latest --reference campaigns/refs --fail-on-regression"
    passed = shell(tmp_path, gate)
    assert passed.returncode == 0 and "gate: pass" in passed.stdout, passed.stdout[-2000:] + passed.stderr
    only_one = shell(tmp_path, "ncucampaign run campaigns/try.yaml --samples 3 --only rmsnorm_0\n" + gate)
    assert only_one.returncode == 1, only_one.stdout[-2000:]  # mlp_gemm, in the reference, profiled nothing
    assert "mlp_gemm" in only_one.stdout and "gate: FAIL" in only_one.stdout, only_one.stdout[-2000:]
    faster = {**data}  # the reference 30% faster than every run: the run is SLOWER
    shell(tmp_path, "ncucampaign run campaigns/try.yaml --samples 3 --only rmsnorm_0 mlp_gemm")
    for metric in faster["targets"]["rmsnorm_0"]["metrics"].values():
        metric["samples"] = [round(v * 0.7, 6) for v in metric["samples"]]
    reference.write_text(yaml.safe_dump(faster))
    failed = shell(tmp_path, gate)
    assert failed.returncode == 1 and "SLOWER" in failed.stdout and "rmsnorm_0" in failed.stdout, failed.stdout[-3000:]
    assert failed.stdout.strip().splitlines()[-1].startswith("gate: FAIL: 1 SLOWER (rmsnorm_0")
    faster["targets"]["rmsnorm_0"]["gate"] = "soft"  # a soft target is shown, and does not fail the gate
    reference.write_text(yaml.safe_dump(faster))
    assert shell(tmp_path, gate).returncode == 0
    other = {**data, "header": {**data["header"], "ncu": "2026.3.1.0"}}
    reference.write_text(yaml.safe_dump(other))
    refused = shell(tmp_path, gate)
    assert refused.returncode == EXIT_NOT_COMPARABLE and "not comparable: its ncu version" in refused.stderr
    reference.rename(refs / "NVIDIA-A100.yaml")
    missing = shell(tmp_path, gate)
    assert missing.returncode == 2 and "no reference for NVIDIA H200" in missing.stderr
    assert "there: NVIDIA-A100.yaml" in missing.stderr and "Traceback" not in missing.stderr


def reference_of_one_run(tmp_path: Path) -> Path:
    """A checkout with one run of rmsnorm_0 on the fake ncu, and the reference made from it."""
    checkout_in(tmp_path, "campaigns/try.yaml", "tests/fake_ncu", "tests/fixtures/reports", "ncucampaign/spec/data")
    made = shell(tmp_path, "ncucampaign run campaigns/try.yaml --only rmsnorm_0\n"
                 "ncucampaign reference update campaigns/runs/try/2*")  # fmt: skip
    reference = tmp_path / "campaigns" / "refs" / "NVIDIA-H200.yaml"
    assert reference.is_file(), made.stdout + made.stderr
    return reference


@pytest.mark.slow
def test_a_damaged_reference_is_named_never_an_internal_error(tmp_path: Path) -> None:
    reference = reference_of_one_run(tmp_path)
    good = yaml.safe_load(reference.read_text())
    target = good["targets"]["rmsnorm_0"]
    damaged = [
        "reference: 1\ntargets: [1, 2\n",  # not YAML
        "a: &a [*a]\n",  # a self-referencing alias
        yaml.safe_dump({**good, "targets": {"rmsnorm_0": {**target, "launch": {**target["launch"], "grid": "wide"}}}}),
        yaml.safe_dump({**good, "targets": {"rmsnorm_0": {**target, "launch": "gemm"}}}),
        yaml.safe_dump({**good, "targets": {"rmsnorm_0": {**target, "metrics": {"m": {"samples": ["x"]}}}}}),
        yaml.safe_dump({**good, "targets": {"rmsnorm_0": {**target, "metrics": {"m": {"samples": [1]}}}}}),
        yaml.safe_dump({**good, "header": "none"}),
        yaml.safe_dump({**good, "reference": 2}),
        "\0" * 100,
    ]
    for text in damaged:
        reference.write_text(text)
        done = shell(tmp_path, "ncucampaign compare campaigns/runs/try/latest --reference campaigns/refs")
        assert done.returncode in (0, 1, 2, 4) and "Traceback" not in done.stderr, (text[:200], done.stderr[-2000:])
        assert "internal error" not in done.stderr, (text[:200], done.stderr[-2000:])


@pytest.mark.slow
def test_a_reference_with_a_number_out_of_its_format_exits_2_naming_the_file_and_key(tmp_path: Path) -> None:
    reference = reference_of_one_run(tmp_path)
    good = yaml.safe_load(reference.read_text())
    good["targets"]["rmsnorm_0"]["metrics"]["gpu__time_duration.sum"]["samples"] = [10**400]
    reference.write_text(yaml.safe_dump(good))
    done = shell(tmp_path, "ncucampaign compare campaigns/runs/try/latest --reference campaigns/refs")
    assert done.returncode == 2, done.stdout + done.stderr
    key = "targets.rmsnorm_0.metrics.gpu__time_duration.sum.samples[0]"
    assert f"campaigns/refs/NVIDIA-H200.yaml: {key}: " in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_reference_update_says_which_runs_it_left_out(tmp_path: Path) -> None:
    """Before the fix: over 5 runs whose first launch differed, it wrote one sample a metric and did not
    say that 4 runs were left out."""
    checkout_in(tmp_path, "campaigns/try.yaml", "tests/fake_ncu", "tests/fixtures/reports", "ncucampaign/spec/data")
    made = shell(tmp_path, "ncucampaign run campaigns/try.yaml --only rmsnorm_0")
    runs = tmp_path / "campaigns" / "runs" / "try"
    newest = next(p for p in runs.iterdir() if p.name[0].isdigit())
    for i in range(4):  # older runs whose launches were of another grid
        older = runs / f"20260101-00000{i}"
        shutil.copytree(newest, older)
        manifest = json.loads((older / "manifest.json").read_text())
        manifest["run_id"], manifest["started_at"] = older.name, f"2026-01-01T00:00:0{i}+00:00"
        for result in manifest["targets"][0]["results"]:
            result["grid"] = [999, 1, 1]
        (older / "manifest.json").write_text(json.dumps(manifest))
    done = shell(tmp_path, "ncucampaign reference update campaigns/runs/try/2*")
    assert done.returncode == 0, made.stdout + done.stdout + done.stderr
    assert (
        "note: rmsnorm_0: 4 of 5 runs left out (20260101-000000, 20260101-000001, 20260101-000002, ...)" in done.stdout
    )
    assert "NVIDIA-H200.yaml: 1 target from 1 run" in done.stdout  # before: "from 5 runs"
    header = yaml.safe_load((tmp_path / "campaigns" / "refs" / "NVIDIA-H200.yaml").read_text())["header"]
    assert header["runs"] == [newest.name]  # round 7, item 11: the runs left out were still listed


@pytest.mark.slow
def test_reference_update_pools_only_runs_of_the_newest_runs_setting(tmp_path: Path) -> None:
    """Before: runs of another ncu version or clock setting were pooled under the newest run's header without a
    word, and mixed clock controls wrote `clock_control: base,none`, which no run matches: compare always exit 4."""
    checkout_in(tmp_path, "campaigns/try.yaml", "tests/fake_ncu", "tests/fixtures/reports", "ncucampaign/spec/data")
    made = shell(tmp_path, "ncucampaign run campaigns/try.yaml --only rmsnorm_0")
    runs = tmp_path / "campaigns" / "runs" / "try"
    newest = next(p for p in runs.iterdir() if p.name[0].isdigit())
    for i, change in enumerate(("ncu", "clock", "same")):
        older = runs / f"20260101-00000{i}"
        shutil.copytree(newest, older)
        manifest = json.loads((older / "manifest.json").read_text())
        manifest["run_id"], manifest["started_at"] = older.name, f"2026-01-01T00:00:0{i}+00:00"
        if change == "ncu":
            manifest["ncu"]["version"] = "2024.1.0.0"
        elif change == "clock":
            manifest["targets"][0]["clock_control"] = "none"
        (older / "manifest.json").write_text(json.dumps(manifest))
    done = shell(tmp_path, "ncucampaign reference update campaigns/runs/try/2*")
    assert done.returncode == 0, made.stdout + done.stdout + done.stderr
    assert "note: run 20260101-000000 left out: made with ncu 2024.1.0.0, not as the newest run" in done.stdout
    assert "note: run 20260101-000001 left out: made with clock control none, not as the newest run" in done.stdout
    assert "NVIDIA-H200.yaml: 1 target from 2 runs" in done.stdout, done.stdout
    header = yaml.safe_load((tmp_path / "campaigns" / "refs" / "NVIDIA-H200.yaml").read_text())["header"]
    assert header["clock_control"] == "base" and len(header["runs"]) == 2
    gate = shell(tmp_path, "ncucampaign compare campaigns/runs/try/latest --reference campaigns/refs")
    assert gate.returncode == 0, gate.stdout[-2000:] + gate.stderr[-2000:]  # comparable: one setting


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"reference": 2}, "not a reference file of this version (reference: 1, with targets)"),
        ({"targets": []}, "not a reference file of this version (reference: 1, with targets)"),
        ({"targets": {"t": {"metrics": {}}}}, "targets.t.launch: missing"),
        ({"targets": {"t": {"launch": {"kernel": "k"}, "metrics": {"m": {"samples": [1, "yes"]}}}}},
         "targets.t.metrics.m.samples[1]: 'yes' is not a finite number"),
        ({"targets": {"t": {"launch": {"kernel": "k"}, "metrics": {"m": {"samples": [1], "exact": "yes"}}}}},
         "targets.t.metrics.m.exact: 'yes' is not true or false"),
    ],
)  # fmt: skip
def test_a_hand_edited_reference_is_named_by_the_key_that_is_wrong(changed: dict[str, Any], said: str) -> None:
    from ncucampaign.results.history.reference_file import parsed_reference

    good = {"reference": 1, "gpu": "NVIDIA H200", "header": {}, "targets": {}}
    assert isinstance(parsed_reference(good), Reference)
    assert parsed_reference({**good, **changed}) == said
