"""`ncucampaign history` end to end: run directories of one campaign at commits of a
workload's git history, out of time order; the change is named at its first measured commit, with
the commits between to bisect, and the page is one self-contained file."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import checkout_in, fake_env, run_cli

pytestmark = pytest.mark.slow  # runs the CLI end to end


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def runs_at_commits(tmp_path: Path, knob_from: int | None) -> tuple[Path, list[str]]:
    """One real run of the fake, copied as the run of each measured commit (commit 4 never measured);
    from commit `knob_from` on, rmsnorm_0 is 30% slower. Started in reverse commit order."""
    checkout_in(tmp_path, "campaigns/try.yaml", "tests/fake_ncu", "tests/fixtures/reports", "ncucampaign/spec/data")
    done = run_cli("run", "campaigns/try.yaml", "--samples", "8", "--only", "rmsnorm_0", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    made = next(p for p in (tmp_path / "campaigns" / "runs" / "try").iterdir() if p.name[0].isdigit())
    work = tmp_path / "workload"
    work.mkdir()
    git(work, "init", "-q")
    for i in range(8):
        git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", f"c{i}")
    commits = list(reversed(git(work, "rev-list", "--first-parent", "HEAD").split()))
    root = tmp_path / "history"
    for i, commit in enumerate(commits):
        if i == 4:
            continue
        copy = root / f"2026120{9 - i}-000000"
        shutil.copytree(made, copy, symlinks=True)
        manifest = json.loads((copy / "manifest.json").read_text())
        manifest["run_id"], manifest["started_at"] = copy.name, f"2026-12-0{9 - i}T00:00:00+00:00"
        manifest["workload_git"] = {"root": str(work), "commit": commit, "dirty": False}
        for j, result in enumerate(manifest["targets"][0]["results"]):
            slower = 1.3 if knob_from is not None and i >= knob_from else 1.0
            result["metrics"]["gpu__time_duration.sum"]["value"] *= slower * (1 + 0.004 * (j % 5 - 2))
        (copy / "manifest.json").write_text(json.dumps(manifest))
    return root, commits


def test_history_names_the_commit_of_a_step_and_what_to_bisect(tmp_path: Path) -> None:
    root, commits = runs_at_commits(tmp_path, knob_from=4)
    page = tmp_path / "history.html"
    done = run_cli("history", "--runs-root", str(root), "--html", str(page), cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ordered by the workload's first-parent commits" in done.stdout
    assert f"rmsnorm_0 gpu__time_duration.sum: SLOWER at 20261204-000000 ({commits[5][:10]})" in done.stdout
    assert f"git bisect start {commits[5]} {commits[3]}  # 1 commit(s) between" in done.stdout
    assert done.stdout.count(": SLOWER at") == 1 and "FASTER" not in done.stdout
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "<script" not in html and "SLOWER at" in html
    as_json = run_cli("history", "--runs-root", str(root), "--format", "json", cwd=tmp_path, env=fake_env())
    series = json.loads(as_json.stdout)
    duration = next(s for s in series if s["metric"] == "gpu__time_duration.sum")
    assert [p["commit"] for p in duration["points"]] == [c for i, c in enumerate(commits) if i != 4]
    gate = run_cli("history", "--runs-root", str(root), "--fail-on-regression", cwd=tmp_path, env=fake_env())
    assert gate.returncode == 1


def test_the_same_commits_without_the_knob_flag_nothing(tmp_path: Path) -> None:
    root, _ = runs_at_commits(tmp_path, knob_from=None)
    done = run_cli("history", "--runs-root", str(root), "--fail-on-regression", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0 and "no change found" in done.stdout, done.stdout + done.stderr


def test_the_page_shows_every_change_the_text_shows_and_the_command_says_where_it_is(tmp_path: Path) -> None:
    """Before the fix: the page drew durations only, so a register count that went 25 -> 168 (what made
    --fail-on-regression exit 1) was not on it, and the command did not say where it wrote it."""
    root, _ = runs_at_commits(tmp_path, knob_from=None)
    for i, run in enumerate(sorted(root.iterdir())):  # the newest four runs: 168 registers a thread
        manifest = json.loads((run / "manifest.json").read_text())
        for result in manifest["targets"][0]["results"]:
            result["metrics"]["launch__registers_per_thread"] = {
                "value": 168 if i >= 3 else 25,
                "unit": "register/thread",
            }
        (run / "manifest.json").write_text(json.dumps(manifest))
    page = tmp_path / "history.html"
    done = run_cli("history", "--runs-root", str(root), "--html", str(page), cwd=tmp_path, env=fake_env())
    changed = [line for line in done.stdout.splitlines() if ": CHANGED at " in line]
    assert changed and all("launch__registers_per_thread" in line for line in changed), done.stdout
    html = page.read_text()
    for line in changed:
        assert line.replace(">", "&gt;") in html
    assert "25 register/thread" in html and "168 register/thread" in html  # its own chart, in its unit
    assert f"history: page written to {page}" in done.stderr


def test_json_and_csv_name_the_unit_of_their_numbers_and_csv_escapes_names(tmp_path: Path) -> None:
    """Before the fix: durations came in seconds (3.744e-06) with no unit where a reference says
    `unit: ns`, and --format csv printed the raw ESC of a run's name (summarize's CSV escapes it)."""
    root, _ = runs_at_commits(tmp_path, knob_from=None)
    newest = sorted(root.iterdir())[-1] / "manifest.json"
    manifest = json.loads(newest.read_text())
    manifest["run_id"] = "\x1b]0;pwned\x07run"
    newest.write_text(json.dumps(manifest))
    as_json = json.loads(run_cli("history", "--runs-root", str(root), "--format", "json", cwd=tmp_path).stdout)
    assert {s["unit"] for s in as_json if s["metric"] == "gpu__time_duration.sum"} == {"second"}
    as_csv = run_cli("history", "--runs-root", str(root), "--format", "csv", cwd=tmp_path).stdout
    assert "\x1b" not in as_csv and "\x07" not in as_csv and "\\x1b]0;pwned\\x07run" in as_csv
    header, first = as_csv.splitlines()[:2]
    assert header.split(",")[8:10] == ["median", "unit"] and first.split(",")[9] == "second"


def test_the_page_folds_unchanged_series_and_keeps_the_run_ids_at_its_ends_inside_the_chart() -> None:
    """Before: 300 unchanged series drew 300 flat charts in the open, and the run ids under the first and last
    points were clipped at both ends of every chart."""
    import re

    from ncucampaign.results.history.changes import Change, Point
    from ncucampaign.results.history.series import Series
    from ncucampaign.results.page.history_page import STILL_SHOWN, WIDTH, history_page
    from ncucampaign.spec.ncu_catalog import DURATION

    points = tuple(Point(f"2026120{i}-000000", None, ("H200",), (1e-6, 1.1e-6)) for i in range(3))
    still = [Series(f"t{i}", DURATION, points, (), ()) for i in range(300)]
    moved = Series("moved", DURATION, points, (Change(2, "SLOWER", 0.2, 0.001, 1e-6, 1.2e-6),), ())
    page = history_page("h", [*still[:150], moved, *still[150:]], [p.run for p in points])
    opened, folded = page.split("<details>")
    assert opened.count("<figure>") == 1 and "moved" in opened  # what moved, in the open
    assert "<summary>300 targets whose duration did not change</summary>" in folded and folded.count("<figure>") == 300
    assert len(still) > STILL_SHOWN
    ends = re.findall(r'<text x="([\d.]+)" y="\d+" font-size="9" text-anchor="(\w+)">20261200-000000<', page)
    assert ends and all(anchor == "start" and float(x) < 5 for x, anchor in ends)
    last = re.findall(r'<text x="([\d.]+)" y="\d+" font-size="9" text-anchor="(\w+)">20261202-000000<', page)
    assert last and all(anchor == "end" and float(x) > WIDTH - 5 for x, anchor in last)
