"""compare and history of runs of 300 targets where every value moved: a note said of every target is one line, each
table lists the changes that moved most and counts the rest, the CI summary stays small; JSON keeps every value.
Before the fix, compare of two such runs of 20,000 targets printed 180,000 lines (72 s, 1.67 GB) and history of nine
160,000 lines; a Markdown summary of 6.5 MB is more than a CI job's page takes (1 MiB)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from ncucampaign.results.gate.folding import LISTED
from tests.conftest import checkout_in, fake_env, run_cli

pytestmark = pytest.mark.slow  # runs the CLI end to end

TARGETS = 300


def runs_moved(tmp_path: Path, count: int) -> list[Path]:
    """One real run of the fake as `count` runs of TARGETS targets, one second apart, every number in run i scaled by
    1 + i/10 (the SM clock too: durations are not comparable)."""
    checkout_in(tmp_path, "campaigns/try.yaml", "tests/fake_ncu", "tests/fixtures/reports", "ncucampaign/spec/data")
    done = run_cli("run", "campaigns/try.yaml", "--only", "rmsnorm_0", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    made = next(p for p in (tmp_path / "campaigns" / "runs" / "try").iterdir() if p.name[0].isdigit())
    data = json.loads((made / "manifest.json").read_text())
    (one,) = data["targets"]
    runs = []
    for i in range(count):
        run = tmp_path / "runs" / f"20261209-00000{i}"
        shutil.copytree(made, run, symlinks=True)
        moved = copy.deepcopy(data)
        moved["run_id"], moved["started_at"] = run.name, f"2026-12-09T00:00:0{i}+00:00"
        moved["targets"] = [{**copy.deepcopy(one), "name": f"t{n}"} for n in range(TARGETS)]
        for target in moved["targets"]:
            for result in target["results"]:
                for value in result["metrics"].values():
                    if type(value["value"]) in (int, float):
                        value["value"] *= 1 + i / 10
        (run / "manifest.json").write_text(json.dumps(moved))
        runs.append(run)
    return runs


def test_compare_says_a_note_of_every_target_once_and_lists_the_largest_changes(tmp_path: Path) -> None:
    a, b = runs_moved(tmp_path, 2)
    summary = tmp_path / "summary.md"
    done = run_cli("compare", str(a), str(b), "--markdown", str(summary), cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    clocks = [line for line in lines if "SM frequency" in line]
    assert len(clocks) == 1 and f"{TARGETS} targets" in clocks[0], clocks
    assert "more flagged changes not shown (--all shows them" in done.stdout
    assert f"{TARGETS - LISTED} more CHANGED" in done.stdout
    assert len(lines) < 4 * LISTED, len(lines)
    assert "t299[0]" in clocks[0]  # the last target named, as the first few are
    every = run_cli("compare", str(a), str(b), "--all", cwd=tmp_path, env=fake_env())
    assert every.stdout.count(" rmsnorm_kernel ") > 2 * TARGETS  # every value of every target
    as_json = json.loads(run_cli("compare", str(a), str(b), "--format", "json", cwd=tmp_path, env=fake_env()).stdout)
    assert {change["target"] for change in as_json["changes"] if change["flagged"]} == {f"t{n}" for n in range(300)}
    assert len(as_json["notes"]) >= TARGETS
    page = summary.read_text()
    assert f"{TARGETS - LISTED} more CHANGED" in page and page.count("| CHANGED |") == LISTED


def test_history_lists_the_largest_changes_and_counts_the_rest(tmp_path: Path) -> None:
    runs = runs_moved(tmp_path, 3)
    done = run_cli("history", *map(str, runs), cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    listed = [line for line in done.stdout.splitlines() if line.startswith("t") and " at " in line]
    assert len(listed) == LISTED, done.stdout
    assert "more (changes in" in done.stdout and "--all or --format csv or json lists every one" in done.stdout
    every = run_cli("history", *map(str, runs), "--all", cwd=tmp_path, env=fake_env())
    everything = [line for line in every.stdout.splitlines() if line.startswith("t") and " at " in line]
    series = json.loads(run_cli("history", *map(str, runs), "--format", "json", cwd=tmp_path, env=fake_env()).stdout)
    assert len(everything) >= sum(len(s["changes"]) for s in series) > LISTED
