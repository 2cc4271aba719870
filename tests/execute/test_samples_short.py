"""run says when samples fall short and how to pin them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import campaign_text, fake_env, run_cli


@pytest.mark.slow
def test_run_says_when_samples_fall_short_and_how_to_pin_them(tmp_path: Path) -> None:
    """N5: `run --samples 5` gave 3 samples in one launch state; only summarize said so."""
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: rms\n  kernel_name: rmsnorm_kernel\n"))
    done = run_cli("run", "camp.yaml", "--samples", "5", "--out", "runs", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("samples: ")]
    assert line.startswith("samples: rms: 3 of 5 samples in one launch state"), line
    assert 'pin them to that state (nvtx_include: "[decode_step/layer]")' in line and "(samples: 9)" in line
