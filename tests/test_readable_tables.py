"""Tables a person can read: numbers whole at 80 columns, long kernel names shortened in the middle,
no padding in piped output, no empty tables."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from ncucampaign.commands.summarize import report_record
from ncucampaign.results.metrics import COLUMNS
from ncucampaign.results.tables import middle, target_table
from tests.conftest import FIXTURES, load_manifest, run_cli

pytest.importorskip("ncu_report", reason="the ncu-report wheel (pip install ncucampaign[reports])")

CUDNN = FIXTURES / "reports" / "nvtx_nested.ncu-rep"  # one cuDNN flash-attention kernel (a 100-character name)


def rendered(renderable: object, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, force_terminal=True, color_system=None, highlight=False).print(renderable)
    return out.getvalue()


@pytest.mark.parametrize("width", [80, 120, 160])
def test_every_number_is_whole_at_a_narrow_width(width: int) -> None:
    record = report_record(CUDNN)
    assert len(record.results[0].kernel) > 80
    text = rendered(target_table("run", record, width=width), width)  # summarize passes its width
    numbers = {column.header: column.format(record.results[0].value(column.metric)) for column in COLUMNS}
    not_shown = text.split("not shown at this width:", 1)[1] if "not shown at this width:" in text else ""
    # every number is whole, or its column is named as not shown (and --wide shows it)
    assert all(n in text or header in not_shown for header, n in numbers.items() if n), text
    assert numbers["duration us"] in text and record.results[0].kernel[:20] in text


@pytest.mark.slow
def test_long_kernel_names_are_shortened_in_the_middle_and_shown_whole_with_wide(tmp_path: Path) -> None:
    name = report_record(CUDNN).results[0].kernel
    short = middle(name)
    assert len(short) == 48 and short.startswith(name[:20]) and short.endswith(name[-10:])
    assert middle("rmsnorm_kernel") == "rmsnorm_kernel"
    piped = run_cli("summarize", str(CUDNN), cwd=tmp_path).stdout
    assert short in piped and name not in piped
    assert name in run_cli("summarize", str(CUDNN), "--wide", cwd=tmp_path).stdout
    assert name in run_cli("summarize", str(CUDNN), "--format", "csv", cwd=tmp_path).stdout


@pytest.mark.slow
def test_piped_output_has_no_trailing_padding_and_no_wrapped_prose(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(
        "- name: rms\n  kernel_name: rmsnorm_kernel\n- name: typo\n  kernel_name: no_such_kernel\n"
    )
    run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path)
    run_dir, _ = load_manifest(tmp_path / "runs")
    out = run_cli("summarize", str(run_dir), cwd=tmp_path).stdout
    lines = out.splitlines()
    assert lines and all(line == line.rstrip() for line in lines)
    assert max(len(line) for line in lines) < 400
    # a target without results is one line, not an empty table, and its message is not wrapped
    (typo,) = [line for line in lines if line.startswith("typo: no_kernels")]
    message = next(t for t in load_manifest(tmp_path / "runs")[1]["targets"] if t["name"] == "typo")["message"]
    assert len(message) > 40 and message in typo  # long enough that a wrapping table would have cut it
