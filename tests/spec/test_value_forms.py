"""The forms a value takes: durations like timeout's, lists not written as strings, whole numbers for counts,
NVTX expressions kept whole, extra_args checked against ncu's options."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncucampaign.spec.loader import parse_campaign
from tests.conftest import (
    BARE_APP,
    campaign_problems,
    campaign_text,
    cli_in,
)


@pytest.mark.slow  # runs the CLI end to end
def test_retry_delay_takes_a_duration_like_timeout(tmp_path: Path) -> None:
    text = campaign_text("- name: t\n  retry_delay: 1s\n  timeout: 30s\n").replace("  retry_delay: 0\n", "")
    assert cli_in(tmp_path, "validate", "camp.yaml", text=text).returncode == 0


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ('sections: "SpeedOfLight, MemoryWorkloadAnalysis"', "[SpeedOfLight, MemoryWorkloadAnalysis]"),
        ('sections: "[SpeedOfLight]"', "[SpeedOfLight]"),
        ('nvtx_include: "[decode_step/, mlp/]"', "[decode_step/, mlp/]"),
        ('metrics: "[gpu__time_duration.sum, dram__bytes.sum]"', "[gpu__time_duration.sum, dram__bytes.sum]"),
        ('lint_ignore: "NCU001, NCU004"', "[NCU001, NCU004]"),
    ],
)
def test_a_list_written_as_a_string_is_an_error_at_the_defaults_line(value: str, written: str) -> None:
    """N1: each passed validate (warnings at each target's line at most) and every target failed at run time."""
    found = campaign_problems(BARE_APP + f"defaults:\n  {value}\ntargets:\n  - name: a\n  - name: b\n")
    (only,) = found
    assert only.startswith(f"4:defaults.{value.split(':')[0]}: ") and only.endswith(written), found


def test_an_nvtx_expression_with_brackets_or_commas_of_its_own_is_kept() -> None:
    loaded = parse_campaign(
        BARE_APP + "targets:\n  - name: a\n    nvtx_include: ['[decode_step/layer]', 'A,B', 'mlp]']\n", Path("c.yaml")
    )
    assert loaded.campaign.targets[0].nvtx_include == ("[decode_step/layer]", "A,B", "mlp]")


@pytest.mark.parametrize(
    ("value", "said"),
    [("true", "not true"), ("'3'", "not the text '3'"), ("3.0", "not 3.0")],
)
@pytest.mark.parametrize("key", ["samples", "launch_count"])
def test_counts_take_whole_numbers_only(key: str, value: str, said: str) -> None:
    (only,) = campaign_problems(BARE_APP + f"targets:\n  - name: a\n    {key}: {value}\n")
    assert only == f"5:targets[0].{key}: expected a whole number, {said}" + (
        " (write it without quotes)" if value.startswith("'") else ""
    )


def test_an_unknown_extra_arg_suggests_only_a_close_option() -> None:
    (far,) = campaign_problems(BARE_APP + "targets:\n  - name: a\n    extra_args: [--no-such-option]\n")
    assert "did you mean" not in far  # it was '--section'
    (near,) = campaign_problems(BARE_APP + "targets:\n  - name: a\n    extra_args: [--print-sumary, per-kernel]\n")
    assert "did you mean '--print-summary'?" in near
