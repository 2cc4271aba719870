"""A target whose launches lie beyond what the discovery trace held runs alone; when that run profiles nothing (a
misspelt kernel name: the application ran to its end and nothing matched), the miss is kept beside the trace and a
later run on the kept trace closes the target on it, without a start of its own (execute/trace/cache/kept_misses.py).
On real workloads that start cost half a cached run (llama_serve, docs/shared-runs.md). Tests against the fake ncu,
end to end: the fake application here launches more than the trace's 2,000-launch bound."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import campaign_text, fake_env, load_manifest, run_cli, target

pytestmark = pytest.mark.slow  # runs the CLI end to end, several times

# 400 steps: 1,600 rmsnorm and 800 nvjet launches, past the trace's bound; `typo` matches none of them.
TARGETS = """
- name: rms
  kernel_name: rmsnorm_kernel
  launch_skip: 3
- name: gemm
  kernel_name: regex:nvjet
  launch_skip: 1
- name: typo
  kernel_name: rmsnrom_kernel
"""


def run(tmp_path: Path) -> tuple[Path, dict[str, Any], str]:
    campaign = tmp_path / "camp.yaml"  # written once: the folder's files are part of the workload's identity
    if not campaign.exists():
        campaign.write_text(campaign_text(TARGETS, defaults="args: ['--steps', '400']"))
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=fake_env())
    assert done.returncode == 1, done.stdout + done.stderr  # typo: no_kernels
    run_dir, manifest = load_manifest(tmp_path / "runs")
    assert {t["name"]: t["status"] for t in manifest["targets"]} == {"rms": "ok", "gemm": "ok", "typo": "no_kernels"}
    return run_dir, manifest, done.stdout


def traces(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in manifest["shared_runs"] if r["kind"] == "trace"]


def misses_file(tmp_path: Path) -> Path:
    [kept] = (tmp_path / "runs" / ".cache" / "traces").glob("*.misses.json")
    return kept


def test_a_miss_past_the_trace_costs_its_start_once(tmp_path: Path) -> None:
    first_dir, first, _ = run(tmp_path)
    [trace] = traces(first)
    assert trace["trace"]["launches"] == 2000  # it held its bound: the application went on past it
    typo = target(first, "typo")
    assert typo["obtained"]["how"] == "alone" and typo["attempts"], typo  # its own run decided it
    assert "beyond the discovery trace's first 2000 launches" in typo["obtained"]["reason"]
    hints = typo["diagnosis"]
    assert any("rmsnorm_kernel" in hint for hint in hints), hints

    again_dir, again, out = run(tmp_path)
    assert traces(again) == []  # the trace is the kept one
    typo = target(again, "typo")
    assert typo["obtained"]["how"] == "trace" and typo["attempts"] == [], typo  # no start of its own
    assert first["run_id"] in typo["message"] and first["run_id"] in typo["obtained"]["reason"], typo
    assert typo["diagnosis"] == hints  # what its own run hinted, kept
    assert not (again_dir / "logs" / "typo.log").exists()
    assert (first_dir / "logs" / "typo.log").exists()
    assert "1 alone" not in out, out
    assert typo["obtained"]["miss_run"] == first["run_id"], typo
    assert f"closed on misses their own runs found in run {first['run_id']}: typo" in out, out
    assert "decided on the trace" not in out, out  # it was not: the trace does not hold its launches
    assert {target(again, n)["obtained"]["how"] for n in ("rms", "gemm")} == {"shared"}


def test_a_trace_made_again_forgets_the_misses_kept_beside_the_one_it_replaces(tmp_path: Path) -> None:
    run(tmp_path)
    assert misses_file(tmp_path).is_file()
    for report in (tmp_path / "runs" / ".cache" / "traces").glob("*.ncu-rep"):
        report.write_bytes(b"damaged")  # not the file kept: the next run traces again
    _, again, _ = run(tmp_path)
    assert len(traces(again)) == 1
    typo = target(again, "typo")
    assert typo["obtained"]["how"] == "alone" and typo["attempts"], typo  # not closed on the old trace's miss
    assert misses_file(tmp_path).is_file()  # kept anew, by this run's own run


DAMAGED = [b"", b"\xff\xfe not json", b"[]", b'{"misses": []}', b'{"misses": {"x": {"run": ""}}}', b"{" * 100_000]


def test_a_damaged_misses_file_is_no_miss_kept(tmp_path: Path) -> None:
    run(tmp_path)
    for damage in DAMAGED:  # each: a clean run where the target pays its own start again, and its miss kept again
        misses_file(tmp_path).write_bytes(damage)
        _, again, _ = run(tmp_path)
        assert traces(again) == []
        typo = target(again, "typo")
        assert typo["obtained"]["how"] == "alone" and typo["attempts"], (damage[:40], typo)
        assert misses_file(tmp_path).read_bytes() != damage
    _, last, _ = run(tmp_path)
    assert target(last, "typo")["obtained"]["how"] == "trace"


def test_a_link_planted_for_the_misses_file_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    run(tmp_path)
    kept = misses_file(tmp_path)
    victim = tmp_path / "victim.json"
    victim.write_text(kept.read_text())  # a miss that would read, behind a link
    kept.unlink()
    kept.symlink_to(victim)
    before = victim.read_text()
    _, again, _ = run(tmp_path)
    typo = target(again, "typo")
    assert typo["obtained"]["how"] == "alone" and typo["attempts"], typo  # the link is not read
    assert victim.read_text() == before  # nor written through
