"""A report reader older than ncu is named with the wheel to install, and run refuses before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import campaign_text, fake_env, run_cli


@pytest.mark.slow  # runs the CLI end to end
@pytest.mark.parametrize(
    ("ncu", "wheel", "problem"),
    [
        ("2025.3.1.0", "2026.3.1", False),
        ("2026.3.1.0", "2026.3.0", False),
        ("2026.3.1.0", "2025.3.1", True),
        (None, "2025.3.1", False),
        ("2026.1.0", None, False),
    ],
)
def test_a_reader_older_than_ncu_is_named_with_the_wheel_to_install(
    ncu: str | None, wheel: str | None, problem: bool
) -> None:
    from ncucampaign.results.reading.report_reader import reader_too_old

    found = reader_too_old(ncu, wheel)
    assert (found is not None) == problem
    if found:
        assert "pip install 'ncu-report>=2026.3'" in found


@pytest.mark.slow  # runs the CLI end to end
def test_run_refuses_before_anything_runs_when_the_reader_cannot_open_ncus_reports(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n"))
    # its own cache of what the installed ncu lists: the answer is cached per ncu binary, and the
    # other tests use the same fake ncu as 2025.3.1
    env = fake_env(FAKE_NCU_VERSION="2099.1.0.0", XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=env)
    assert done.returncode == 3 and "pip install 'ncu-report>=2099.1'" in done.stderr, done.stderr
    assert not (tmp_path / "runs").exists()
