"""`--only` at size (round 7, item 12): shell-style patterns select targets (`--only 'rms_00*'` failed: exact names
only), and an error lists a few targets, not 1,000 in one 11,876-character line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncucampaign.plan.expand import matching
from tests.conftest import campaign_text, run_cli


def campaign(tmp_path: Path, count: int = 1000) -> None:
    targets = "".join(f"- name: rms_{i:04d}\n  kernel_name: rmsnorm_kernel\n  launch_skip: {i}\n" for i in range(count))
    (tmp_path / "camp.yaml").write_text(campaign_text(targets))


@pytest.mark.parametrize(
    ("only", "count"), [(["rms_00*"], 100), (["rms_000?", "rms_0999"], 11), (["rms_[0-1]00[05]"], 2)]
)
def test_plan_selects_targets_by_shell_style_pattern(tmp_path: Path, only: list[str], count: int) -> None:
    campaign(tmp_path)
    done = run_cli("plan", "camp.yaml", "--no-share", "--format", "json", "--only", *only, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-1000:]
    assert len(json.loads(done.stdout)["invocations"]) == count


def test_a_pattern_or_name_that_selects_nothing_names_a_few_targets_on_one_short_line(tmp_path: Path) -> None:
    campaign(tmp_path)
    done = run_cli("plan", "camp.yaml", "--only", "gemm_*", cwd=tmp_path)
    assert done.returncode == 2 and "--only: no target matches 'gemm_*'" in done.stderr, done.stderr
    assert "(1000 in all)" in done.stderr and len(done.stderr) < 400, len(done.stderr)


def test_matching_keeps_exact_names_and_patterns_and_refuses_what_keeps_nothing() -> None:
    names = ["a_1", "a_2", "b_1"]
    assert matching(["a_*", "b_1"], names) == {"a_1", "a_2", "b_1"}
    with pytest.raises(KeyError, match="c_1"):
        matching(["a_1", "c_1"], names)


def test_the_help_says_patterns_are_taken() -> None:
    done = run_cli("plan", "--help", cwd=Path.cwd())
    assert "shell-style patterns" in " ".join(done.stdout.split())
