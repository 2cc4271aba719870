"""ncu versions: what ncucampaign does differently per release, against the fake ncu as
2025.3.1 and as 2026.3.1 whatever $FAKE_NCU_VERSION the suite runs under (each test keeps its own
cache of what the installed ncu lists: that cache is per binary, and the fake is one binary)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncucampaign.spec.ncu_versions import NcuVersion, release_of
from tests.conftest import campaign_text, fake_env, load_manifest, run_cli, target

pytestmark = pytest.mark.slow  # runs the CLI end to end

TARGETS = "- name: rms\n  kernel_name: rmsnorm_kernel\n- name: gemm\n  kernel_name: regex:nvjet\n"


def env_of(tmp_path: Path, version: str) -> dict[str, str]:
    return fake_env(FAKE_NCU_VERSION=version, XDG_CACHE_HOME=str(tmp_path / f"cache-{version}"))


def test_the_version_table() -> None:
    assert release_of("2026.3.1.0") == (2026, 3) and release_of("junk") is None
    assert NcuVersion("2025.3.1.0").report_suffix == ".ncu-rep"
    assert NcuVersion("2026.2.0").report_suffix == ".ncu-rep"
    assert NcuVersion("2026.3.1.0").report_suffix == ".ncu-repz"
    assert NcuVersion(None).report_suffix == ".ncu-rep"  # unknown: the measured 2025.3.1
    assert NcuVersion("2025.3.1").clock_default == "base" and NcuVersion("2026.1.0").clock_default == "boost"
    assert NcuVersion("2025.3.1").lacks("--communicator") == (2026, 1)
    assert NcuVersion("2026.1.0").lacks("--communicator") is None
    assert NcuVersion("2026.1.0").lacks("--process-id") == (2026, 2)


@pytest.mark.parametrize(("version", "suffix"), [("2025.3.1.0", ".ncu-rep"), ("2026.3.1.0", ".ncu-repz")])
def test_every_reader_takes_the_reports_each_version_writes(tmp_path: Path, version: str, suffix: str) -> None:
    """run (shared and alone), summarize, findings, compare and report on a run of such reports, and
    summarize and findings on a bare report; 2026.3's are zstd-compressed .ncu-repz."""
    (tmp_path / "camp.yaml").write_text(campaign_text(TARGETS))
    env = env_of(tmp_path, version)
    runs = []
    for extra in ((), ("--no-share",)):
        done = run_cli("run", "camp.yaml", "--out", "runs", *extra, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        run_dir, manifest = load_manifest(tmp_path / "runs")
        runs.append(run_dir)
        for name in ("rms", "gemm"):
            record = target(manifest, name)
            assert record["report"]["path"] == f"reports/{name}{suffix}"
            assert record["argv"][record["argv"].index("-o") + 1] == str(run_dir / record["report"]["path"])
            assert record["results"] and record["clock_control"] == "base"  # pinned where the campaign has none
        assert manifest["ncu"]["version"] == version
    report = runs[0] / "reports" / f"rms{suffix}"
    if suffix == ".ncu-repz":
        assert report.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"  # a zstd frame
    for command in (["summarize", str(runs[0])], ["summarize", str(report)], ["findings", str(runs[1])]):
        done = run_cli(*command, cwd=tmp_path, env=env)
        assert done.returncode == 0 and "rmsnorm_kernel" in done.stdout + done.stderr, (command, done.stderr)
    done = run_cli("findings", str(report), "--format", "json", cwd=tmp_path, env=env)
    assert done.returncode == 0 and json.loads(done.stdout), done.stderr
    done = run_cli("compare", str(runs[0]), str(runs[1]), "--format", "json", cwd=tmp_path, env=env)
    assert done.returncode == 0 and json.loads(done.stdout)["changes"], done.stderr
    done = run_cli("report", str(runs[1]), cwd=tmp_path, env=env)
    assert done.returncode == 0 and f"reports/gemm{suffix}" in (runs[1] / "report.html").read_text()


def test_an_option_a_later_ncu_added_is_refused_before_anything_runs(tmp_path: Path) -> None:
    campaign = "- name: a\n  kernel_name: rmsnorm_kernel\n  communicator: shmem\n  communicator_shmem_num_peers: 2\n"
    (tmp_path / "camp.yaml").write_text(campaign_text(campaign))
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=env_of(tmp_path, "2025.3.1.0"))
    assert done.returncode == 3, done.stdout + done.stderr
    assert (
        "--communicator: the installed ncu 2025.3.1.0 does not list it in --help (NVIDIA added it in ncu 2026.1)"
        in (done.stderr)
    )
    assert not (tmp_path / "runs").exists()
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=env_of(tmp_path, "2026.1.0.0"))
    assert done.returncode == 0, done.stdout + done.stderr
    argv = target(load_manifest(tmp_path / "runs")[1], "a")["argv"]
    assert argv[argv.index("--communicator") : argv.index("--communicator") + 4] == [
        "--communicator",
        "shmem",
        "--communicator-shmem-num-peers",
        "2",
    ]


def test_compare_flags_results_taken_at_different_clocks(tmp_path: Path) -> None:
    env = env_of(tmp_path, "2025.3.1.0")
    for clock in ("base", "boost"):
        (tmp_path / "camp.yaml").write_text(campaign_text(TARGETS, defaults=f"clock_control: {clock}"))
        assert run_cli("run", "camp.yaml", "--out", f"runs-{clock}", cwd=tmp_path, env=env).returncode == 0
    done = run_cli("compare", "runs-base/camp/latest", "runs-boost/camp/latest", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "rms: clock control base in A, boost in B; durations are not comparable" in done.stdout + done.stderr
