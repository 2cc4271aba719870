"""Check the report's charts against what ncu itself prints: every plotted number (roofline points and
ceilings, memory-chart bytes, warp states) recomputed from ncu's raw page (`ncu --import R --page raw
--csv --print-units base`, full precision) with the formulas of ncu's own section files, written out
here again rather than imported, so that a mistake in ncucampaign cannot hide in both.

    python tests/results/chart_check.py RUN_DIR RAW_DIR   # RAW_DIR/<target>.raw.csv for each target's report
"""

from __future__ import annotations

import csv
import io
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

TOLERANCE = 0.001  # 0.1%
SVG = re.compile(r"<svg\b.*?</svg>", re.S)


def raw_rows(text: str) -> list[dict[str, float]]:
    """The numeric values of each result of a raw CSV page (the units row is skipped); with each, under
    "<metric>#step", half the last digit it was printed with (ncu prints ratios with two decimals)."""
    lines = [line for line in text.splitlines() if not line.startswith("==")]
    rows = []
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        if not (row.get("ID") or "").strip().isdigit():
            continue
        values = {}
        for name, text_value in row.items():
            text_value = (text_value or "").replace(",", "")
            try:
                values[name] = float(text_value)
            except ValueError:
                continue
            decimals = len(text_value.partition(".")[2]) if "e" not in text_value.lower() else 15
            values[f"{name}#step"] = 0.5 * 10.0**-decimals
        rows.append(values)
    return rows


def expected(row: dict[str, float]) -> dict[str, float]:
    """What each chart should plot for one result, keyed as `plotted` keys it."""
    sm, smsp = row["sm__cycles_elapsed.avg.per_second"], row["smsp__cycles_elapsed.avg.per_second"]
    out: dict[str, float] = {}
    dram, l2 = row["dram__bytes.sum.per_second"], row["lts__lts2xbar_cycles_active.sum.per_second"] * 32

    def inst(op: str, what: str, step: bool = False) -> float:
        unit = "sm" if what == "peak_sustained" else "smsp"
        return row.get(f"{unit}__sass_thread_inst_executed_op_{op}_pred_on.sum.{what}" + ("#step" if step else ""), 0.0)

    def rounded(work: float, work_step: float, name: str) -> None:
        """How far the printed digits of the inputs let a product stray (ncu prints per-cycle values
        with two decimals): the bound on work, and on work over each bandwidth."""
        out[f"work {name}#step"] = work_step
        for level, bandwidth, key in (("DRAM", dram, "dram__bytes.sum.per_second"),
                                      ("L2", l2, "lts__lts2xbar_cycles_active.sum.per_second")):  # fmt: skip
            relative = work_step / work + row.get(f"{key}#step", 0.0) / (
                bandwidth if level == "DRAM" else bandwidth / 32
            )
            out[f"intensity {name} {level}#step"] = work / bandwidth * relative

    # SpeedOfLight_RooflineChart (FP32, FP64) and the Half Precision chart (half2: x2, x2, x4)
    for name, fma, adds, per_fma, factor in (("FP64", "dfma", ("dadd", "dmul"), 2, 1), ("FP32", "ffma", ("fadd", "fmul"), 2, 1),
                                             ("FP16", "hfma", ("hadd", "hmul"), 4, 2)):  # fmt: skip
        work = (
            per_fma * inst(fma, "per_cycle_elapsed") + factor * sum(inst(op, "per_cycle_elapsed") for op in adds)
        ) * smsp
        if work:
            step = (
                per_fma * inst(fma, "per_cycle_elapsed", True)
                + factor * sum(inst(op, "per_cycle_elapsed", True) for op in adds)
            ) * smsp
            rounded(work, step, name)
            out[f"work {name}"] = work
            out[f"peak {name}"] = per_fma * inst(fma, "peak_sustained") * sm
            out[f"intensity {name} DRAM"], out[f"intensity {name} L2"] = work / dram, work / l2
    # the Hierarchical Tensor chart, per tensor path (CC 9.0: sm__ops_path_tensor_op_*)
    for metric, per_cycle in row.items():
        found = re.fullmatch(r"sm__ops_path_tensor_op_(\w+)\.sum\.per_cycle_elapsed", metric)
        if found and per_cycle:
            name = "Tensor " + found[1].replace("_", " ")
            out[f"work {name}"] = per_cycle * sm
            out[f"peak {name}"] = row[metric.replace("per_cycle_elapsed", "peak_sustained")] * sm
            out[f"intensity {name} DRAM"], out[f"intensity {name} L2"] = per_cycle * sm / dram, per_cycle * sm / l2
    out["bandwidth DRAM"] = row["dram__bytes.sum.peak_sustained"] * row["dram__cycles_elapsed.avg.per_second"]
    out["bandwidth L2"] = (
        row["lts__lts2xbar_cycles_active.sum.peak_sustained"] * 32 * row["lts__cycles_elapsed.avg.per_second"]
    )
    for metric, label in (("l1tex__m_xbar2l1tex_read_bytes.sum", "L2 → L1/TEX (reads)"),
                          ("l1tex__m_l1tex2xbar_write_bytes.sum", "L1/TEX → L2 (writes)"),
                          ("dram__bytes_read.sum", "DRAM → L2 (reads)"), ("dram__bytes_write.sum", "L2 → DRAM (writes)")):  # fmt: skip
        out[f"bytes {label}"] = row[metric]
    for metric, value in row.items():
        stall = re.fullmatch(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio", metric)
        if stall:
            out[f"state {stall[1]}"] = value
            out[f"state {stall[1]}#step"] = row[f"{metric}#step"]
    return out


def svgs(html: str) -> dict[str, ET.Element]:
    """Every SVG of the page by id, parsed as XML (so each must be well formed)."""
    found = {}
    for text in SVG.findall(html):
        element = ET.fromstring(text)
        found[element.get("id", "")] = element
    return found


NS = "{http://www.w3.org/2000/svg}"


def plotted(roofline: ET.Element | None, memory: ET.Element | None, states: ET.Element | None) -> dict[str, float]:
    """What one result's charts plot, keyed as `expected` keys it."""
    out: dict[str, float] = {}
    for circle in roofline.iter(f"{NS}circle") if roofline is not None else ():
        if circle.get("data-work") is None:
            continue  # the legend's
        name = circle.get("data-precision", "")
        out[f"work {name}"] = float(circle.get("data-work", "nan"))
        out[f"intensity {name} {circle.get('data-level')}"] = float(circle.get("data-intensity", "nan"))
    for line in roofline.iter(f"{NS}polyline") if roofline is not None else ():
        out[f"peak {line.get('data-precision')}"] = float(line.get("data-peak-work", "nan"))
        level = "DRAM" if "ceiling-dram" in (line.get("class") or "") else "L2"
        out[f"bandwidth {level}"] = float(line.get("data-bandwidth", "nan"))
    for rect in memory.iter(f"{NS}rect") if memory is not None else ():
        out[f"bytes {rect.get('data-label')}"] = float(rect.get("data-value", "nan"))
    for rect in states.iter(f"{NS}rect") if states is not None else ():
        label = (rect.get("data-label") or "").removeprefix("Stall ").lower().replace(" ", "_")
        out[f"state {label}"] = float(rect.get("data-value", "nan"))
    return out


def differences(drawn: dict[str, float], wanted: dict[str, float]) -> list[tuple[str, float, float | None, float]]:
    """(what, plotted, expected, relative difference) for every plotted number; a number with nothing
    expected counts as a difference of 1 (100%)."""
    rows = []
    for key, value in sorted(drawn.items()):
        want = wanted.get(key)
        diff = 1.0 if want is None else abs(value - want) / abs(want) if want else abs(value)
        if want is not None and abs(value - want) <= wanted.get(f"{key}#step", 0.0) * (1 + 1e-9):
            diff = 0.0  # equal to what ncu printed, at the digits it printed
        rows.append((key, value, want, diff))
    return rows


def check_run(run_dir: Path, raw_dir: Path) -> list[tuple[str, str, float, float | None, float]]:
    """(target, what, plotted, expected, difference) over every target whose charts the report drew."""
    import json

    html = (run_dir / "report.html").read_text()
    charts = svgs(html)
    out = []
    for target in json.loads((run_dir / "manifest.json").read_text())["targets"]:
        raw = raw_dir / f"{target['name']}.raw.csv"
        if not raw.is_file():
            continue
        for result, row in zip(target["results"], raw_rows(raw.read_text()), strict=False):
            label = target["name"] + (f"[{result['index']}]" if len(target["results"]) > 1 else "")
            slug = "".join(ch if ch.isalnum() else "-" for ch in label)
            drawn = plotted(
                charts.get(f"roofline-{slug}"), charts.get(f"memory-{slug}"), charts.get(f"warp-states-{slug}")
            )
            out += [(label, *row_) for row_ in differences(drawn, expected(row))]
    return out


def main() -> int:
    rows = check_run(Path(sys.argv[1]), Path(sys.argv[2]))
    for target, what, value, want, diff in rows:
        shown = "(nothing)" if want is None else f"{want:.6g}"
        print(f"{target:12} {what:58} {value:>14.6g} {shown:>14} {100 * diff:.2e}%")
    worst = max((row[-1] for row in rows), default=0.0)
    print(f"{len(rows)} plotted numbers checked; largest difference {100 * worst:.2e}% (tolerance {100 * TOLERANCE}%)")
    return 0 if rows and worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
