"""A report that reads empty after ncu said it profiled is not ok."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import fake_env, load_manifest, run_cli, target


@pytest.mark.slow  # runs the CLI end to end
def test_a_report_that_reads_empty_after_ncu_profiled_is_not_ok(tmp_path: Path, write_campaign) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "name_exact.ncu-rep").write_bytes(b"not a report")  # ncu_report reads it as empty
    campaign = write_campaign("- name: t\n  kernel_name: rmsnorm_kernel\n")
    done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=fake_env(FAKE_NCU_REPORTS=str(reports)))
    assert done.returncode == 1
    _, manifest = load_manifest(tmp_path / "runs")
    record = target(manifest, "t")
    assert record["status"] == "profiler_error" and "ncu's console shows 1 profiled" in record["message"]
    junk = reports / "name_exact.ncu-rep"
    done = run_cli("summarize", str(junk), cwd=tmp_path)
    assert done.returncode == 2 and "holds no results" in done.stderr and "pip install" not in done.stderr
