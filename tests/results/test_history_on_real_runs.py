"""History and references on real runs: the manifests of tests/gpu/history_check.sh on an
H200 with ncu 2025.3.1 (2026-12-02). Two git histories of 6 commits of the decode workload, one run a
commit, five targets of 12 samples; in "knob", commit 4 makes the MLP 25% wider (the down
projection's GEMM reads 25% more weight), in "plain" it changes a note.

The GEMM targets take 23 launches that alternate between two GEMMs (two launch states): the reference
made from them once held both kernels, and a fresh A/A run failed against it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import yaml

from tests.conftest import ROOT, fake_env, run_cli_here

FIXTURES = ROOT / "tests" / "fixtures" / "history_real_runs"


def runs(tmp_path: Path, side: str) -> list[Path]:
    """The side's six runs as run directories under tmp_path/side, oldest first. Their repository is
    not here: history orders them by time, which is their commits' order."""
    made = []
    for commit in range(1, 7):
        manifest = json.loads(gzip.decompress((FIXTURES / f"{side}-c{commit}.json.gz").read_bytes()))
        manifest["workload_git"]["root"] = str(tmp_path / "no-repository")
        folder = tmp_path / side / manifest["run_id"]
        folder.mkdir(parents=True)
        (folder / "manifest.json").write_text(json.dumps(manifest))
        made.append(folder)
    return made


def cli(tmp_path: Path, *args: str) -> tuple[int, str]:
    done = run_cli_here(*args, cwd=tmp_path, env=fake_env())
    return done.returncode, done.stdout + done.stderr


def test_history_names_commit_4_for_the_widened_gemm_alone_and_nothing_without_the_knob(tmp_path: Path) -> None:
    knob = runs(tmp_path, "knob")
    code, out = cli(tmp_path, "history", "--runs-root", str(tmp_path / "knob"), "--fail-on-regression")
    commit_4 = json.loads((knob[3] / "manifest.json").read_text())["workload_git"]["commit"]
    assert code == 1 and f"mlp_down_gemm gpu__time_duration.sum: SLOWER at {knob[3].name} ({commit_4[:10]})" in out, out
    assert out.count(" at ") == 1, out  # no other target, metric or commit
    runs(tmp_path, "plain")
    code, out = cli(tmp_path, "history", "--runs-root", str(tmp_path / "plain"), "--fail-on-regression")
    assert code == 0 and "no change found" in out, out


def test_a_reference_of_alternating_launches_keeps_one_state_and_an_aa_run_passes(tmp_path: Path) -> None:
    plain, knob = runs(tmp_path, "plain"), runs(tmp_path, "knob")
    refs = tmp_path / "refs"
    code, out = cli(tmp_path, "reference", "update", *map(str, plain[:3]), "--to", str(refs))
    assert code == 0, out
    reference = yaml.safe_load((refs / "NVIDIA-H200.yaml").read_text())
    first = json.loads((plain[2] / "manifest.json").read_text())
    for name in ("mlp_down_gemm", "qkv_gemm"):
        results = next(t for t in first["targets"] if t["name"] == name)["results"]
        launch = reference["targets"][name]["launch"]
        assert (launch["kernel"], launch["grid"]) == (results[0]["kernel"], results[0]["grid"])
        kernels = {(r["kernel"], tuple(r["grid"])) for r in results}
        assert len(kernels) == 2  # the run's launches alternate; the reference holds the first state's
        assert len(reference["targets"][name]["metrics"]["gpu__time_duration.sum"]["samples"]) == 20
    for fresh in plain[3:]:  # runs the reference was not made from
        code, out = cli(tmp_path, "compare", str(fresh), "--reference", str(refs), "--fail-on-regression")
        assert code == 0 and out.strip().splitlines()[-1].startswith("gate: pass"), out[-3000:]
    code, out = cli(tmp_path, "compare", str(knob[3]), "--reference", str(refs), "--fail-on-regression")
    assert code == 1 and out.strip().splitlines()[-1].startswith("gate: FAIL: 1 SLOWER (mlp_down_gemm +"), out[-3000:]
