"""`ncucampaign findings`: ncu's rule results from real reports, checked against what ncu's own
details page printed for the same reports, and ranked across a run."""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path

import pytest

from ncucampaign.results.findings import Finding, rank
from ncucampaign.results.reading.rules import RuleResult, plain
from tests.conftest import FIXTURES, REPORT, run_cli

pytestmark = pytest.mark.slow  # runs the CLI end to end

pytest.importorskip("ncu_report", reason="the ncu-report wheel (pip install ncucampaign[reports])")

# ncu --import R --page details --csv of these reports (tests/fixtures/csv, from the H200).
WITH_DETAILS = ("name_exact", "children_all", "nvtx_rangefilter")


def details_rules(case: str) -> list[tuple[str, str, str]]:
    """(result ID, rule name, description) as ncu's details page lists them."""
    with open(FIXTURES / "csv" / f"{case}_details.csv") as handle:
        return [(r["ID"], r["Rule Name"], r["Rule Description"]) for r in csv.DictReader(handle) if r["Rule Name"]]


@pytest.mark.parametrize("case", WITH_DETAILS)
def test_findings_of_a_report_are_what_ncus_details_page_prints(case: str, tmp_path: Path) -> None:
    report = FIXTURES / "reports" / f"{case}.ncu-rep"
    done = run_cli("findings", str(report), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = sorted(
        (str(o["result"]), g["rule"], g["message"] if o["result"] == g["occurrences"][0]["result"] else "")
        for g in json.loads(done.stdout)
        for o in g["occurrences"]
    )
    expected = details_rules(case)
    assert [(i, rule) for i, rule, _ in listed] == sorted((i, rule) for i, rule, _ in expected)
    first = json.loads(done.stdout)[0]
    assert first["message"] in {description for _, _, description in expected}  # links made plain text
    text = run_cli("findings", str(report), cwd=tmp_path).stdout
    assert "1. Small Grid  [OPT, SOLBottleneck, section SpeedOfLight]" in text


def test_link_markup_becomes_its_text() -> None:
    assert plain("See @section:LaunchStats:Launch Statistics@ and @url:docs:https://x.y/z@.") == (
        "See Launch Statistics and docs."
    )
    assert plain("@source:a.cu:12:line 12@ @sass:0x40:this instruction@") == "line 12 this instruction"


def rule(title: str, speedup: float | None, kind: str = "OPT", kernel: str = "k") -> RuleResult:
    return RuleResult(0, kernel, title.replace(" ", ""), title, "S", title, f"{title}.", kind, speedup, None, ())


def test_findings_are_grouped_and_ranked_by_estimated_speedup() -> None:
    findings = [
        Finding("a", rule("Small Grid", None)),
        Finding("a", rule("Uncoalesced", 12.0, kernel="gemm")),
        Finding("b", rule("Uncoalesced", 31.5, kernel="attn")),
        Finding("b", rule("Tail Effect", 20.0)),
        Finding("c", rule("Fine", None, kind="OK")),
        Finding("c", rule("Small Grid", None, kernel="other")),
    ]
    groups = rank(findings)
    assert [(g.first.title, g.best_speedup, len(g.occurrences)) for g in groups] == [
        ("Uncoalesced", 31.5, 2),
        ("Tail Effect", 20.0, 1),
        ("Small Grid", None, 2),
    ]
    assert groups[0].kernels == ["attn", "gemm"] and groups[0].targets == ["b", "a"]
    assert [g.first.title for g in rank(findings, include_ok=True)][-1] == "Fine"


@pytest.mark.versions
def test_findings_of_a_run_name_their_targets_and_survive_a_damaged_report(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(
        "- name: rms\n  kernel_name: rmsnorm_kernel\n  share: 'off'\n"
        "- name: gemm\n  kernel_name: regex:nvjet\n  share: 'off'\n"
    )
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 0
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()
    done = run_cli("findings", str(run_dir), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (group,) = json.loads(done.stdout)
    assert group["title"] == "Small Grid" and [o["target"] for o in group["occurrences"]] == ["rms", "gemm"]
    damaged_report = FIXTURES / "damaged" / "aborts_the_reader.ncu-rep"  # NVIDIA's reader aborts on it
    damaged_bytes = damaged_report.read_bytes()
    if REPORT == ".ncu-repz":  # damaged as ncu 2026.3 would have written it: compressed
        import zstandard

        damaged_bytes = zstandard.ZstdCompressor().compress(damaged_bytes)
    (run_dir / "reports" / f"gemm{REPORT}").write_bytes(damaged_bytes)
    damaged = run_cli("findings", str(run_dir), cwd=tmp_path)
    # the other target's findings still show; the exit status says a report could not be read
    assert damaged.returncode == 2 and "in target rms" in damaged.stdout
    assert "error: gemm:" in damaged.stderr
    missing = run_cli("findings", str(tmp_path / "no.ncu-rep"), cwd=tmp_path)
    assert missing.returncode == 2 and "no such report" in missing.stderr


def test_the_manifest_records_findings_and_the_html_report_puts_them_first(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(
        "- name: rms\n  kernel_name: rmsnorm_kernel\n  share: 'off'\n- name: typo\n  kernel_name: rmsnorm_kernal\n"
    )
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 1
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (finding,) = manifest["targets"][0]["results"][0]["findings"]
    assert (finding["rule"], finding["title"], finding["type"]) == ("SOLBottleneck", "Small Grid", "OPT")
    assert "Launch Statistics" in finding["message"] and "@section" not in finding["message"]
    done = run_cli("report", str(run_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = (run_dir / "report.html").read_text()
    assert page.index("What to fix first") < page.index('<h2 id="targets-table">')
    assert "<b>Small Grid</b>" in page and "SOLBottleneck" in page
    targets = page[page.index('<h2 id="targets-table">') :]
    assert ">findings</th>" in targets and '<span title="This kernel grid is too small' in targets
    attention = page[page.index("Targets that need attention") :]
    hints = manifest["targets"][1]["diagnosis"]
    assert hints and all(html.escape(hint) in attention for hint in hints)  # the failed target's hints and fix


def test_compare_lists_findings_that_appeared_or_disappeared(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign("- name: rms\n  kernel_name: rmsnorm_kernel\n  share: 'off'\n")
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 0
    before = (tmp_path / "runs" / "camp" / "latest").resolve()
    after = tmp_path / "after"
    manifest = json.loads((before / "manifest.json").read_text())
    (finding,) = manifest["targets"][0]["results"][0]["findings"]
    manifest["targets"][0]["results"][0]["findings"] = [
        {**finding, "rule": "Occupancy", "title": "Achieved Occupancy"}  # B: one gone, one new
    ]
    after.mkdir()
    (after / "manifest.json").write_text(json.dumps(manifest))
    done = run_cli("compare", str(before), str(after), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["findings_appeared"] == ["rms: Occupancy: Achieved Occupancy"]
    assert data["findings_disappeared"] == ["rms: SOLBottleneck: Small Grid"]
    text = run_cli("compare", str(before), str(after), cwd=tmp_path).stdout
    assert "finding appeared in B: rms: Occupancy: Achieved Occupancy" in text
    assert "finding gone in B: rms: SOLBottleneck: Small Grid" in text


def test_a_metrics_only_target_is_said_to_have_no_rule_results_not_nothing_to_fix(
    tmp_path: Path, write_campaign
) -> None:
    campaign = write_campaign(
        "- name: timed\n  kernel_name: rmsnorm_kernel\n  sections: []\n  metrics: [gpu__time_duration.sum]\n"
    )
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 0
    done = run_cli("findings", str(tmp_path / "runs" / "camp" / "latest"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # after the findings, apart from them (round 7, item 9)
    assert done.stdout.rstrip().endswith(
        "timed: ncu's rules did not run (a metrics-only target collects no sections, so no rule results)"
    )
    assert "not findings: what ncu's rules could not judge" in done.stdout
    assert "Small Grid" not in done.stdout  # the fake's fixture report has rule results ncu would not have run


@pytest.mark.parametrize("content", [b"", b"not a report at all\n", "truncated"], ids=["empty", "garbage", "truncated"])
def test_findings_of_a_file_that_is_no_report_says_so_as_summarize_does(tmp_path: Path, content: object) -> None:
    """Before the fix: 'no findings: ncu's rules reported nothing to act on', exit 0, for a file that is none."""
    report = tmp_path / f"odd{REPORT}"
    real = (FIXTURES / "reports" / "name_exact.ncu-rep").read_bytes()
    report.write_bytes(real[: len(real) // 4] if content == "truncated" else content)  # type: ignore[arg-type]
    done = run_cli("findings", str(report), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "holds no results (empty, truncated, or not a report)" in done.stderr
    assert "nothing to act on" not in done.stdout


def test_findings_of_a_run_name_a_report_that_holds_nothing_and_of_a_run_with_no_report(
    tmp_path: Path, write_campaign
) -> None:
    campaign = write_campaign("- name: rms\n  kernel_name: rmsnorm_kernel\n  share: 'off'\n")
    assert run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path).returncode == 0
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()
    (run_dir / "reports" / f"rms{REPORT}").write_bytes(b"")
    done = run_cli("findings", str(run_dir), cwd=tmp_path)
    assert done.returncode == 2 and "rms: " in done.stderr and "holds no results" in done.stderr, done.stderr
    broken = write_campaign("- name: typo\n  kernel_name: rmsnorm_kernal\n", name="broken.yaml")
    assert run_cli("run", str(broken), "--out", "runs", cwd=tmp_path).returncode == 1
    none = run_cli("findings", str(tmp_path / "runs" / "broken" / "latest"), cwd=tmp_path)
    assert none.returncode == 0, none.stderr
    assert none.stdout.strip() == "no findings: no target of this run has a report to read (1 no_kernels)"


def test_on_a_terminal_a_finding_wraps_under_its_own_indent_and_piped_it_stays_one_line() -> None:
    from ncucampaign.commands.findings import fitted

    message = "   " + " ".join(f"word{i}" for i in range(60))
    text = "1. Small Grid  [OPT, LaunchConfiguration, section LaunchStats]  est. speedup 93.9% (global)\n" + message
    assert fitted(text, None) == text
    lines = fitted(text, 80).splitlines()
    assert all(len(line) < 80 for line in lines) and len(lines) > 4
    first = next(i for i, line in enumerate(lines) if line.startswith("   word0 "))
    assert all(line.startswith("   ") for line in lines[1:first])  # the title's own, under its text
    assert all(line.startswith("   word") for line in lines[first:])
    assert " ".join(line.strip() for line in lines[first:]) == message.strip()
