"""A lower stage hands values back; it calls up into a higher stage only through what the command line handed
down for that purpose, and only for two things: telling the display what is happening (commands/parts/progress.py) and
reading a report ncu wrote (results/reading/records.py, through ncu's own report module). A run is watched call by
call (sys.setprofile) on the fake ncu: every call from a module of one stage into a function of a later stage is
such a round trip."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from pathlib import Path
from types import FrameType

from tests.benchmarks.scale import campaign
from tests.conftest import fake_env, run_cli_here
from tests.test_architecture import STAGES, stage_of

# The round trips a run is allowed, by the module called up into.
ALLOWED = {"ncucampaign.commands.parts.progress", "ncucampaign.results.reading.records"}


def calls_up(*args: str, cwd: Path) -> Counter[tuple[str, str]]:
    """(caller module, called module) of every call into a later stage, while the CLI runs in this process."""
    seen: Counter[tuple[str, str]] = Counter()

    def watch(frame: FrameType, event: str, _arg: object) -> None:
        caller = frame.f_back
        if event != "call" or caller is None:
            return
        called, calling = frame.f_globals.get("__name__", ""), caller.f_globals.get("__name__", "")
        if not (called.startswith("ncucampaign.") and calling.startswith("ncucampaign.")):
            return
        above, below = stage_of(called), stage_of(calling)
        if above in STAGES and below in STAGES and STAGES.index(below) < STAGES.index(above):
            seen[(calling, called)] += 1

    sys.setprofile(watch)
    threading.setprofile(watch)  # type: ignore[arg-type]
    try:
        result = run_cli_here(*args, cwd=cwd, env=fake_env())
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    assert result.returncode == 0, result.stdout + result.stderr
    return seen


def test_a_shared_run_calls_up_a_stage_only_to_show_progress_and_read_reports(tmp_path: Path) -> None:
    (tmp_path / "scale.yaml").write_text(campaign(12))
    seen = calls_up("run", "scale.yaml", "--out", "runs", cwd=tmp_path)
    assert {called for _, called in seen} == ALLOWED, sorted(seen)


def test_the_watch_sees_a_call_up_a_stage(tmp_path: Path) -> None:
    """It can fail: the start checks (NCU013) asked a Machine that execute/ implements, from plan/, until they
    took the machine's answers as values; a run's validate pass made those calls."""
    (tmp_path / "scale.yaml").write_text(campaign(12))
    seen = calls_up("validate", "scale.yaml", cwd=tmp_path)
    assert seen == Counter(), sorted(seen)
