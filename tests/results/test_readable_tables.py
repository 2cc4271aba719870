"""Tables a person can read: numbers whole at 80 columns, long kernel names shortened in the middle,
no padding in piped output, no empty tables."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from ncucampaign.commands.summarize import report_record
from ncucampaign.results.metrics import COLUMNS, STANDARD_METRICS, apart, middle
from ncucampaign.results.tables.target_tables import target_table
from tests.conftest import FIXTURES, load_manifest, run_cli

pytest.importorskip("ncu_report", reason="the ncu-report wheel (pip install ncucampaign[reports])")

CUDNN = FIXTURES / "reports" / "nvtx_nested.ncu-rep"  # one cuDNN flash-attention kernel (a 100-character name)


def rendered(renderable: object, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, force_terminal=True, color_system=None, highlight=False).print(renderable)
    return out.getvalue()


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
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


def test_names_that_would_shorten_alike_drop_the_head_they_share_and_stay_apart() -> None:
    """llama_train's report at 800 px: three cuBLAS targets read `nvjet_sm9…bz_TNT` alike in the name column."""
    gemms = ["nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT", "nvjet_sm90_tst_256x64_64x5_2x1_v_bz_TNT",
             "nvjet_sm90_tst_64x64_64x13_2x1_v_bz_TNT"]  # fmt: skip
    others = ["nvjet_sm90_tst_176x128_64x5_1x2_h_bz_TNN", "elementwise_kernel", "rms", "a" * 20, "a" * 21]
    shown = apart([*gemms, *others, gemms[0]], 16)
    assert list(shown) == [*gemms, *others]  # each once, in order
    assert all(len(short) <= 16 for short in shown.values()), shown
    assert len({shown[g] for g in gemms}) == 3 and shown[gemms[0]] == "…128x128_…bz_TNT", shown
    # what shortens apart anyway is shortened as everywhere else; what fits stays whole
    assert (
        [shown[o] for o in others[:3]]
        == [middle(o, 16) for o in others[:3]]
        == [middle(others[0], 16), "elementwi…kernel", "rms"]
    )
    assert shown["a" * 21] == "…" + "a" * 15  # as much of the tail as the width holds, never an empty "…"


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


FULL = FIXTURES / "reports" / "full_decode2.ncu-rep"  # `set: full` on the H200: about 60 metrics a result
SOL_CLOCK = "dram__cycles_elapsed.avg.per_second"


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        (3180199430.19943, "hz", "3.18 GHz"),
        (1273700483091.7874, "byte/second", "1.27 TB/s"),
        (12700, "nsecond", "12.7 us"),
        (12.7, "usecond", "12.7 us"),
        (1530, "Mhz", "1.53 GHz"),
        (26.7, "%", "26.7 %"),
        (123456789, "inst", "123M inst"),
        (0.01234, "", "0.0123"),
        (9.996, "byte", "10.0 B"),
        ("sm_90", "", "sm_90"),
    ],
)
def test_values_are_scaled_with_their_unit(value: float | str, unit: str, shown: str) -> None:
    from ncucampaign.results.scaled import scaled

    assert scaled(value, unit) == shown


def test_summarize_shows_the_standard_columns_and_the_campaigns_metrics_scaled() -> None:
    from ncucampaign.results.tables.target_tables import target_text

    record = report_record(FULL)
    recorded = {m for r in record.results for m in r.metrics}
    assert len(recorded) > 50 and SOL_CLOCK in recorded
    plain = target_text("run", record)
    assert SOL_CLOCK not in plain and "smsp__" not in plain  # nobody asked for them
    assert max(len(line) for line in plain.splitlines()) < 200
    asked = record.model_copy(update={"metrics": [SOL_CLOCK, "no.such.metric"]})
    with_metric = target_text("run", asked)
    header = with_metric.splitlines()[2]
    assert SOL_CLOCK in header and "no.such.metric" not in header
    clock = asked.results[0].metrics[SOL_CLOCK]
    assert clock.unit == "hz" and f"{clock.value / 1e9:.2f} GHz" in with_metric
    by_regex = record.model_copy(update={"metrics": ["regex:^dram__cycles"]})
    assert SOL_CLOCK in target_text("run", by_regex).splitlines()[2]  # ncu's regex: form of --metrics
    every = target_text("run", record, all_metrics=True)
    assert all(metric in every for metric in recorded if metric not in STANDARD_METRICS)


@pytest.mark.parametrize("width", [80, 100, 120])
def test_the_terminals_width_is_filled_before_a_column_is_left_out(width: int) -> None:
    from ncucampaign.results.tables.target_tables import target_rows

    record = report_record(FULL)
    text = rendered(target_table("run", record, width=width), width)
    widest = max(len(line.rstrip()) for line in text.splitlines() if "not shown" not in line)
    assert widest <= width, text
    found = target_rows("run", record)
    assert not isinstance(found, str)
    caption = text.split("not shown at this width: ", 1)[1] if "not shown at this width: " in text else ""
    left_out = [h for h in found.headers if h in caption.split(" (--wide")[0].replace("\n", " ").split(", ")]
    for header in left_out:  # each column left out would not have fitted beside the ones shown
        position = found.headers.index(header)
        column = max(len(header), *(len(row[position]) for row in found.rows)) + 3
        assert widest + column + 1 > width, (header, text)  # + the table's right edge
    assert "occupancy %" not in left_out or width < 100, text
