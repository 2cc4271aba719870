"""Progress that moves (issue 80): while an attempt runs, its launches are counted from ncu's console as ncu says
each is done, out of the launches it may profile, with the time left (the price list's seconds a launch until this
attempt has measured its own); through a pipe a shared run says so when it starts and ends and every
LAUNCHES_EVERY_S in between, and its estimate at a quarter of a union is near what the union then took."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ncucampaign.commands.parts import progress
from ncucampaign.commands.parts.progress_text import duration, launches_text
from ncucampaign.execute.attempt.context import FinishedTargets
from ncucampaign.execute.attempt.launches import MEASURED_AFTER, LaunchCount
from ncucampaign.execute.rundir.manifest import TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.shared.split import Split
from ncucampaign.execute.shared.splits import Splits
from tests.benchmarks.scale import campaign
from tests.conftest import fake_env, run_cli
from tests.manifests import target_record


def line(number: int, passes: int = 10) -> str:
    return f'==PROF== Profiling "rmsnorm_kernel" - {number}: 0%....50%....100% - {passes} passes\n'


def test_launches_are_counted_as_ncu_says_each_is_done_and_the_estimate_turns_to_what_was_measured() -> None:
    count = LaunchCount(expected=240, priced_s=0.4, started=0.0)
    assert count.left_s() == pytest.approx(96.0)  # 240 at the price list's 0.4 s
    count.feed('==PROF== Connected to process 12 (python3)\n==PROF== Profiling "k" - 0: 0%..', now=1.0)
    assert count.profiled == 0 and count.first_at == 1.0  # begun, not done
    count.feed("..50%....100% - 1 pass\n", now=1.25)
    for number in range(1, MEASURED_AFTER + 1):
        count.feed(line(number), now=1.0 + 0.25 * (number + 1))
    assert count.profiled == MEASURED_AFTER + 1 and count.measured
    assert count.seconds_a_launch() == pytest.approx(0.25)  # this attempt's own, no longer the price list's
    assert count.left_s() == pytest.approx((240 - count.profiled) * 0.25)
    count.feed('==PROF== Profiling "bypass_kernel": 0%..', now=3.0)  # a name with "pass" in it is not a pass
    assert count.profiled == MEASURED_AFTER + 1
    assert LaunchCount(expected=None, priced_s=0.4, started=0.0).left_s() is None


def test_the_estimate_at_a_quarter_of_a_union_is_within_30_percent_of_what_it_took() -> None:
    """Launches of uneven cost (every tenth three times the others), as a union mixing kernels profiles them."""
    count, now, at_quarter = LaunchCount(expected=240, priced_s=0.4, started=0.0), 0.0, None
    for number in range(240):
        now += 0.75 if number % 10 == 0 else 0.25
        count.feed(line(number), now)
        if count.profiled == 60:
            at_quarter = (now, count.left_s())
    assert at_quarter is not None and at_quarter[1] is not None
    predicted = at_quarter[0] + at_quarter[1]
    assert abs(predicted - now) / now <= 0.30, (predicted, now)


def test_what_the_display_says_of_launches() -> None:
    count = LaunchCount(expected=240, priced_s=0.4, started=0.0)
    assert launches_text("shared/2", count, 0.0, False) == (
        "shared/2: 240 launches to profile at most, about 1 min 36 s (0.4 s a launch, priced)"
    )
    for number in range(60):
        count.feed(line(number), 0.5 * (number + 1))
    said = launches_text("shared/2", count, 30.0, False)
    assert said.startswith("shared/2: 60/240 launches in 30 s, about 1 min ") and "measured" in said
    assert launches_text("shared/2", count, 31.0, True) == "shared/2: 60 launches profiled in 31 s"
    assert [duration(s) for s in (0.4, 42, 200, 3900)] == ["0.4 s", "42 s", "3 min 20 s", "1 h 05 min"]


@pytest.mark.slow  # a run of 300 targets whose unions take seconds
def test_through_a_pipe_each_union_says_its_launches_as_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "LAUNCHES_EVERY_S", 0.5)  # 30 s in a run of an hour: the same lines, sooner
    (tmp_path / "scale.yaml").write_text(campaign(300))
    env = fake_env(
        FAKE_NCU_STATE=str(tmp_path / "fake-state"),
        FAKE_NCU_SECONDS_PER_KERNEL="0.02",  # a union of 225 launches: about 5 s
        FAKE_NCU_ONE_PASS_SECONDS_PER_KERNEL="0",
    )
    done = run_cli("run", "scale.yaml", "--out", "runs", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    said = [t.strip() for t in done.stdout.splitlines() if t.strip().startswith("shared/1:") and "launches" in t]
    assert said[0].startswith("shared/1: 225 launches to profile at most, about "), said
    counts = [int(m.group(1)) for text in said if (m := re.match(r"shared/1: (\d+)/225 launches in", text))]
    assert len(counts) >= 2 and counts == sorted(counts) and counts[-1] > counts[0], said  # it moves
    ended = next(text for text in said if "launches profiled in" in text)
    took = float(re.search(r"in ([\d.]+) s$", ended).group(1))  # type: ignore[union-attr]
    quarter = next(t for t in said if (m := re.match(r"shared/1: (\d+)/225", t)) and int(m.group(1)) >= 225 // 4)
    elapsed, left = (float(x) for x in re.search(r"in ([\d.]+) s, about ([\d.]+) s left", quarter).groups())  # type: ignore[union-attr]
    assert abs(elapsed + left - took) / took <= 0.30, (quarter, ended)


class _Told:
    """A reporter that keeps what it was told, and a context's two verbs the splits use."""

    def __init__(self) -> None:
        self.finished = FinishedTargets()
        self.lines: list[tuple[int, int, str]] = []
        self.records = {name: target_record(name, Status.OK) for name in ("a", "b", "c", "d")}

    def target_finished(self, *args: Any) -> None:
        if len(args) == 3:  # the reporter's
            position, total, told = args
            self.lines.append((position, total, told.name))
        else:  # the context's
            self.finished.tell(self, args[0])

    def record(self, name: str) -> TargetRecord:
        return self.records[name]


def test_a_unions_members_are_told_as_they_are_recorded_each_once_and_counted_in_order() -> None:
    """Before, a trace pool's targets were told when the whole pool ended: through a pipe `[30/300]` came with all
    the others, after the last union. Now the split thread tells each member it recorded (not one that a resumed
    run reads out: its note comes later), and the executor's telling of the same record later is no second line."""
    told = _Told()
    told.finished.total = 4
    splits = Splits(told, None)  # type: ignore[arg-type]
    job = SimpleNamespace(members=[])
    member = {name: SimpleNamespace(name=name) for name in told.records}  # an invocation, as far as splits look
    verdicts = [Split(member["a"], True), Split(member["b"], False, "refused"), Split(member["c"], True)]  # type: ignore[arg-type]
    assert splits._told(lambda ctx, j: verdicts, job) == verdicts  # type: ignore[arg-type]
    assert told.lines == [(1, 4, "a"), (2, 4, "c")]  # the refused one runs again: not told
    splits.resumed.add("d")
    splits._told(lambda ctx, j: [Split(member["d"], True)], job)  # type: ignore[arg-type]
    assert told.lines == [(1, 4, "a"), (2, 4, "c")]
    for name in ("a", "b", "c", "d"):  # the executor, as the pool's unit comes back
        told.finished.tell(told, told.records[name])
    assert told.lines == [(1, 4, "a"), (2, 4, "c"), (3, 4, "b"), (4, 4, "d")]
    assert splits._told(lambda ctx, j: "the shared report cannot be listed", job) == (  # type: ignore[arg-type]
        "the shared report cannot be listed"
    )
