"""The zoo benchmark in two calls (tests/benchmarks/zoo.py, `--modes`): a workload whose three runs outlast one
device call makes `no-share` in one call and `first cached` in the next, and the second reads the first's runs and
seconds back from the runs folder, for one row as one call would give it (the fake ncu, a zoo of one workload)."""

from __future__ import annotations

import compileall
from pathlib import Path

import pytest

from tests.benchmarks import zoo
from tests.conftest import campaign_text, fake_env
from tests.execute.shared_campaigns import TRACE_TARGETS

pytestmark = pytest.mark.slow  # six runs of the CLI end to end


def test_a_row_made_in_two_calls_is_the_row_of_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "zoo" / "w").mkdir(parents=True)
    (tmp_path / "zoo" / "w" / "campaign.yaml").write_text(campaign_text(TRACE_TARGETS))
    for key, value in fake_env(NCUCAMPAIGN_ZOO=str(tmp_path / "zoo")).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(compileall, "compile_dir", lambda *args, **kwargs: True)  # the checkout is not the test's
    runs = tmp_path / "runs"

    [alone] = zoo.bench_zoo(["w"], None, None, runs=runs, only_modes=["no-share"])
    assert list(alone.seconds) == ["--no-share"] and alone.note == "" and alone.targets == 5, alone
    [row] = zoo.bench_zoo(["w"], None, None, runs=runs, only_modes=["first", "cached"])
    assert list(row.seconds) == ["--no-share", "trace first", "trace cached"], row
    assert row.seconds["--no-share"] == alone.seconds["--no-share"] and row.bare_s == alone.bare_s  # read back
    assert row.note == "" and row.same_status and row.identity == "10/10", row
    assert row.obtained["shared"] == row.targets == 5, row  # of the trace-first run, not the cached one after it
    assert row.obtained_cached == row.obtained, row  # the cached run's own tally: nothing closed on a kept miss here

    [lone] = zoo.bench_zoo(["w"], None, None, runs=tmp_path / "elsewhere", only_modes=["first"])
    assert lone.note == "no --no-share run to compare with" and "--no-share" not in lone.seconds
