"""A trace pool's files on a batch system (backends/batch/pools.py): its plan written once and read whole, a unit
taken by one task only, a second-stage task that waits for the plan while the first task's heartbeat beats and
gives up once it stops, a resume's first task finding the run's earlier pool (and its trace), and collect reading
each record once however many targets it holds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ncucampaign.backends.batch import collect as collect_module
from ncucampaign.backends.batch import pools
from ncucampaign.backends.batch.files import BatchFiles, Claim
from ncucampaign.backends.batch.pools import PoolFiles, PoolPlan, PoolUnit, earlier_pool, first_tasks, wait_for_plan
from ncucampaign.backends.systems import BATCH
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.manifest import Submission, TaskPlacement, TraceInfo
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunDir, RunStore
from tests.manifests import manifest_with, target_record


def store_in(tmp_path: Path) -> RunStore:
    root = tmp_path / "runs" / "camp" / "20261207-000000"
    root.mkdir(parents=True)
    return RunStore(RunDir(root, root.name))


def plan(pool: str, members: list[str], with_trace: bool = True) -> PoolPlan:
    trace = TraceInfo(report="reports/shared/trace-x.ncu-rep", key="k" * 64, launches=2000, reused=False)
    return PoolPlan(
        pool=pool,
        members=members,
        trace=trace if with_trace else None,
        units=[PoolUnit(names=members[:2]), PoolUnit(names=members[-1:], alone="its own run")],
        planned_by=f"slurm/tasks/{pool}.json",
    )


def test_a_plan_is_read_back_whole_and_a_unit_is_taken_once(tmp_path: Path) -> None:
    files = PoolFiles(store_in(tmp_path), "p1.0")
    files.make_folder()
    assert files.read_plan() is None
    files.write_plan(plan("p1.0", ["a", "b", "c"]))
    assert files.read_plan() == plan("p1.0", ["a", "b", "c"])
    assert files.claim_unit(0, "first") and not files.claim_unit(0, "second")
    assert files.unit_holder(0) == "first" and files.unit_holder(1) is None
    files.plan_path.write_text('{"pool": ')  # a plan cut short is said, not raised
    assert "is damaged" in str(files.read_plan())


def test_a_waiting_task_takes_the_plan_once_written_and_gives_up_on_a_silent_first_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pools, "LOST_S", 0.3)
    monkeypatch.setattr(pools, "POLL_S", 0.05)
    files = PoolFiles(store_in(tmp_path), "p1.0")
    files.make_folder()
    files.beat()  # a first task that beat once, then died
    started = time.monotonic()
    gave_up = wait_for_plan(files, StopRequest())
    assert isinstance(gave_up, str) and "stopped without writing its plan" in gave_up
    assert time.monotonic() - started >= 0.3
    files.write_plan(plan("p1.0", ["a", "b", "c"]))
    assert isinstance(wait_for_plan(files, StopRequest()), PoolPlan)
    stopping = StopRequest()
    stopping.request(1)
    assert wait_for_plan(PoolFiles(files.store, "p9.9"), stopping) == "the task is stopping"
    # held back until its first task ended (Slurm's afterany): a plan not there now never comes, nothing waits
    assert "ended without writing its plan" in str(wait_for_plan(PoolFiles(files.store, "p9.9"), StopRequest(), False))


def test_a_heartbeat_that_goes_on_keeps_the_second_stage_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pools, "LOST_S", 0.3)
    monkeypatch.setattr(pools, "HEARTBEAT_S", 0.05)
    monkeypatch.setattr(pools, "POLL_S", 0.05)
    files = PoolFiles(store_in(tmp_path), "p1.0")
    with pools.beating(files):
        beats = {files.last_beat()}
        deadline = time.monotonic() + 10
        while len(beats) < 3 and time.monotonic() < deadline:  # the heartbeat's file changes as it beats
            beats.add(files.last_beat())
    assert len(beats) >= 3


def test_a_resume_finds_the_latest_earlier_pool_that_traced_all_its_targets(tmp_path: Path) -> None:
    store = store_in(tmp_path)
    for name, members, traced in (
        ("p1.0", ["a", "b", "c", "d"], True),
        ("p3.2", ["a", "b", "c"], True),
        ("p10.0", ["a", "b"], True),
        ("p4.0", ["a", "b", "c", "d"], False),
    ):
        files = PoolFiles(store, name)
        files.make_folder()
        files.write_plan(plan(name, members, traced))
    assert [p.split("/")[-1] for p in first_tasks(store)] == ["p1.0.json", "p3.2.json", "p4.0.json", "p10.0.json"]
    found = earlier_pool(store, ["a", "c"], "p11.0")
    assert found is not None and found.pool == "p3.2"  # p10.0 traced no c; p4.0 took no trace
    assert earlier_pool(store, ["a", "z"], "p11.0") is None


def test_collect_reads_each_record_once_however_many_targets_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,000 targets claimed by one task: its record read once and merged whole (the speed of the merge is
    bench.py slurm's: own seconds from 1,000 to 10,000 targets)."""
    store = store_in(tmp_path)
    files = BatchFiles(store)
    files.make_folders()
    where = TaskPlacement(
        backend="slurm", job_id="43", array_job_id="4242", array_task_id=0, node="n1", cuda_visible_devices="0",
        record="slurm/tasks/4242_0.json",
    )  # fmt: skip
    names = [f"t{i}" for i in range(1000)]
    pending = manifest_with([target_record(name, Status.PENDING) for name in names])
    pending.state = "submitted"
    pending.submissions = [Submission(number=1, job_id="4242", submitted_at="then", script="s", tasks=[names])]
    store.write_json(where.record, manifest_with([target_record(name) for name in names]).model_dump(mode="json"))
    for name in names:
        assert files.claim(name, Claim(**where.model_dump(), pid=1, claimed_at="then"))
    reads: list[str] = []
    real = BatchFiles.read_record

    def counted(self: BatchFiles, relative: str) -> object:
        reads.append(relative)
        return real(self, relative)

    monkeypatch.setattr(BatchFiles, "read_record", counted)
    collected = collect_module.collect(store, pending, BATCH, clean_up=False, save=False)
    assert reads == ["slurm/tasks/4242_0.json"]
    assert [t.status.value for t in collected.manifest.targets] == ["ok"] * 1000
