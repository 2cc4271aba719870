"""summarize on a terminal keeps a long kernel name whole and leaves other columns out."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import campaign_text, run_cli

LONG_KERNEL = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0"


@pytest.mark.slow  # runs the CLI end to end
@pytest.mark.parametrize("columns", [80, 120, 140])
def test_summarize_on_a_terminal_keeps_the_kernel_name_whole_and_drops_other_columns(
    tmp_path: Path, columns: int
) -> None:
    from rich.console import Console

    from ncucampaign.results.metrics import middle
    from ncucampaign.results.reading.runs import load_run
    from ncucampaign.results.tables.target_tables import target_table

    targets = "- name: attention\n  kernel_name: regex:flash\n  nvtx_include: decode_step/\n"
    (tmp_path / "camp.yaml").write_text(campaign_text(targets))
    assert run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path).returncode == 0
    record = load_run(tmp_path / "runs" / "camp").manifest.targets[0]
    record.results[0].kernel = LONG_KERNEL  # the fixture report's kernel is short
    console = Console(width=columns, record=True, force_terminal=True, color_system=None)
    console.print(target_table("run", record, width=columns))
    shown = console.export_text()
    assert middle(LONG_KERNEL) in shown, shown  # the name as --wide-less tables shorten it, never cut further
    assert max(len(line) for line in shown.splitlines()) <= columns
    assert shown.count("…") == 1, shown  # only the kernel name's own shortening: no column cut short
    assert ("not shown at this width" in shown) == (columns < 150), shown
    wide = Console(width=10_000, record=True, color_system=None)  # summarize --wide prints as if piped
    wide.print(target_table("run", record, wide=True, width=columns))
    whole = wide.export_text()
    assert LONG_KERNEL in whole and "NVTX" in whole and "not shown" not in whole
