"""A batch run directory written before the manifest named no backend (bfa33a2: `slurm_arrays`, each target's
`slurm`) reads as today's (`submissions`, `placement`): summarized with where each target ran, collected again,
compared. The fixture is that version's `run --slurm` of two targets on the fake ncu with a stand-in sbatch
(job 4242), both tasks run as Slurm would start them, and collected."""

from __future__ import annotations

import json
from pathlib import Path

from ncucampaign.execute.rundir.reading import read_manifest
from tests.conftest import FIXTURES, fake_env, run_cli
from tests.run_archives import unpack_run


def _unpacked(tmp_path: Path) -> Path:
    unpack_run(FIXTURES / "older_run" / "slurm-bfa33a2.tar.gz", tmp_path)  # made in /tmp/fixgen: rewritten here
    return (tmp_path / "older" / "camp" / "latest").resolve()


def test_an_older_batch_run_reads_with_todays_names(tmp_path: Path) -> None:
    run = _unpacked(tmp_path)
    assert "slurm_arrays" in json.loads((run / "manifest.json").read_text())  # as that version wrote it
    manifest = read_manifest(run)
    assert [(s.backend, s.job_id, s.tasks) for s in manifest.submissions] == [("slurm", "4242", [["a"], ["b"]])]
    placed = {t.name: (t.placement.array_job_id, t.placement.array_task_id) for t in manifest.targets if t.placement}
    assert placed == {"a": ("4242", 0), "b": ("4242", 1)}


def test_an_older_batch_run_summarizes_collects_and_compares(tmp_path: Path) -> None:
    run = _unpacked(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text("#!/bin/sh\nexit 0\n")  # job 4242 has ended
    (bin_dir / "squeue").chmod(0o755)
    env = fake_env(PATH=f"{bin_dir}:{fake_env()['PATH']}")
    summary = run_cli("summarize", str(run), cwd=tmp_path, env=env)
    assert summary.returncode == 0 and "a: ok" in summary.stdout and "b: ok" in summary.stdout, summary.stderr
    collected = run_cli("collect", str(run), cwd=tmp_path, env=env)
    assert collected.returncode == 0 and "4242_1 node1" in collected.stdout, collected.stdout + collected.stderr
    written = json.loads((run / "manifest.json").read_text())  # collect rewrote it: today's names
    assert "slurm_arrays" not in written and written["submissions"][0]["job_id"] == "4242"
    assert [t["placement"]["array_task_id"] for t in written["targets"]] == [0, 1]
    compared = run_cli("compare", str(run), str(run), cwd=tmp_path, env=env)
    assert compared.returncode == 0, compared.stdout + compared.stderr
