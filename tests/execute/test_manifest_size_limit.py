"""A manifest larger than its readers take by default (256 MiB: tens of thousands of targets with many results each)
is not a run lost: the run that wrote it says so at its end and names what reads it, NCUCAMPAIGN_MAX_MANIFEST_MIB, and
every reader that refuses it names the same. Before: the readers said "more than any run writes", which a real run
had just written, and nothing read it. Here the bound is lowered to 1 MiB, under a 250-target run's manifest."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.conftest import campaign_text, fake_env, run_cli

pytestmark = pytest.mark.slow  # runs the CLI end to end


def test_a_manifest_over_the_readers_bound_is_said_at_the_runs_end_and_read_with_the_variable(tmp_path: Path) -> None:
    targets = "".join(f"- name: t{i}\n  kernel_name: rmsnorm_kernel\n  launch_skip: {i % 20}\n" for i in range(250))
    (tmp_path / "camp.yaml").write_text(campaign_text(targets))
    low = fake_env(NCUCAMPAIGN_MAX_MANIFEST_MIB="1")
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=low)
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()
    size = (run_dir / "manifest.json").stat().st_size
    assert done.returncode == 0 and size > 2**20, (size, done.stdout[-2000:], done.stderr[-2000:])
    needed = f"NCUCAMPAIGN_MAX_MANIFEST_MIB={math.ceil(size / 2**20)}"
    assert (
        f"note: this manifest is {size / 2**20:,.0f} MiB, more than the 1 MiB its readers take ({needed}" in done.stdout
    )
    for command in (["summarize", str(run_dir)], ["report", str(run_dir)], ["run", "--resume", str(run_dir)]):
        refused = run_cli(*command, cwd=tmp_path, env=low)
        assert refused.returncode == 2 and f"({needed} reads it" in refused.stderr, (command, refused.stderr)
    raised = fake_env(NCUCAMPAIGN_MAX_MANIFEST_MIB=needed.split("=")[1])
    read = run_cli("summarize", str(run_dir), cwd=tmp_path, env=raised)
    assert read.returncode == 0 and "250 targets" in read.stdout, read.stdout[-500:] + read.stderr
    assert run_cli("summarize", str(run_dir), cwd=tmp_path, env=fake_env()).returncode == 0  # the default: 256 MiB


@pytest.mark.parametrize("value", ["abc", "0", "1.5", "-3", "²", "9" * 5000, str(2**20 + 1)])
def test_a_bound_that_is_no_number_of_mib_is_one_clear_error(tmp_path: Path, value: str) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: t\n  kernel_name: rmsnorm_kernel\n"))
    assert run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env()).returncode == 0
    done = run_cli("summarize", "runs/camp/latest", cwd=tmp_path, env=fake_env(NCUCAMPAIGN_MAX_MANIFEST_MIB=value))
    assert done.returncode == 2 and "NCUCAMPAIGN_MAX_MANIFEST_MIB=" in done.stderr, done.stderr
    assert "a whole number of MiB, 1 to 1048576 (default 256)" in done.stderr and "Traceback" not in done.stderr
