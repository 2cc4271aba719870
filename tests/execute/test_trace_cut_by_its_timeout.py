"""A discovery trace its timeout cut short keeps what it traced: ncu writes the launches it traced until then
(docs/ncu-behaviour.md, "Signals"), the members whose launches came before the cut share one start, and a later
run knows the kept trace for what it is, a trace of that many launches (tests against the fake ncu, end to end)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FAKE_APP, campaign_text, fake_env, load_manifest, run_cli, target
from tests.execute.shared_campaigns import TRACE_TARGETS

pytestmark = pytest.mark.slow  # runs the CLI end to end, and waits out a timeout

# The application hangs at its fourth step, after every launch TRACE_TARGETS want: a trace (which runs to the
# application's end) is stopped by its timeout, each member's own run by its kill after its launch.
HANGS = f"{json.dumps(str(FAKE_APP))}, --hang-at-step, '3']"


def run(tmp_path: Path, *extra: str) -> dict[str, Any]:
    campaign = tmp_path / "camp.yaml"  # written once: the folder's files are part of the workload's identity
    if not campaign.exists():
        text = campaign_text(TRACE_TARGETS, defaults="timeout: 4").replace(f"{json.dumps(str(FAKE_APP))}]", HANGS)
        campaign.write_text(text.replace("  timeout: 30\n", ""))
    done = run_cli("run", str(campaign), "--out", "runs", *extra, cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = load_manifest(tmp_path / "runs")[1]
    for trace in trace_records(manifest):  # the breakdown says what was used of it
        assert f"(timed_out, its {trace['trace']['launches']} launches used)" in done.stdout, done.stdout
    return manifest


def trace_records(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in manifest["shared_runs"] if r["kind"] == "trace"]


def test_a_trace_cut_by_its_timeout_places_the_members_whose_launches_it_holds(tmp_path: Path) -> None:
    manifest = run(tmp_path)
    [trace] = trace_records(manifest)
    assert trace["status"] == "timed_out", trace  # what happened to it is said as it happened
    held = trace["trace"]["launches"]
    assert 0 < held < 2000 and f"the {held} launches it traced until then are used" in trace["message"]
    names = [t["name"] for t in manifest["targets"]]
    assert {t["status"] for t in manifest["targets"]} == {"ok"}
    assert {target(manifest, n)["obtained"]["how"] for n in names} == {"shared"}  # one start, not one each

    again = run(tmp_path)  # the cut trace is kept, and known for a cut one: no trace runs again
    assert trace_records(again) == []
    assert {t["status"] for t in again["targets"]} == {"ok"}
    assert {target(again, n)["obtained"]["how"] for n in names} == {"shared"}
    [side] = [p for p in (tmp_path / "runs" / ".cache" / "traces").glob("*.json") if ".listings." not in p.name]
    assert json.loads(side.read_text())["cut_at"] == held
