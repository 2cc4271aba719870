"""A trace pool on a batch system, in two stages (docs/slurm.md, "A shared campaign on a cluster"). The pool's first
task takes its trace, decides on it what it decides, plans the unions and writes that plan; then the tasks of the
pool's second stage (and the first task too, once its plan is written) take the plan's units one at a time, each by
creating its claim file, and run it on the pool's trace, each on its own GPU. No task submits anything: a system that
can hold the second stage back until the first ends does so (Slurm's --dependency=afterany), one that cannot starts it
at once, and its tasks wait for the plan while the first task's heartbeat beats. Files, beside the tasks' own:

    slurm/pools/<pool>.json           the pool's plan: its members, its trace, its units (written once, whole)
    slurm/pools/<pool>.alive          touched every HEARTBEAT_S while the first task traces and plans
    slurm/pools/<pool>-<k>.claim      who runs unit k (created exclusively: one task runs it)
    slurm/tasks/<pool>-<k>.json       unit k's record, and its journal (<pool>-<k>.journal)
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from pydantic import Field

from ncucampaign.backends.batch.files import created
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.guards import writing
from ncucampaign.execute.rundir.manifest import TraceInfo
from ncucampaign.execute.rundir.reading import RunFileDamaged, read_model
from ncucampaign.execute.rundir.result_records import Record
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.rundir.task_list import BATCH

POOLS = f"{BATCH}/pools"
HEARTBEAT_S = 5.0  # the first task touches its heartbeat this often...
LOST_S = 90.0  # ...and a heartbeat unchanged this long is a first task that died (node failure, kill -9)
FIRST_S = 1800.0  # how long a second-stage task waits for a first task that has not begun (queued behind it)
POLL_S = 1.0
MAX_PLAN_BYTES = 64 << 20  # 20,000 members' names and as many alone reasons: a few MB


class PoolUnit(Record):
    """One unit of a pool's second stage: a union of `names` as planned, or one member that runs alone (`alone`:
    why, as the first stage handed it back)."""

    names: list[str] = Field(min_length=1)
    alone: str | None = Field(None, description="why it runs alone (None: a union of its names)")
    shared_run: str | None = Field(None, description="the shared run it was to be split from, when there was one")
    detail: str = ""


class PoolPlan(Record):
    """slurm/pools/<pool>.json: what the pool's first task planned."""

    pool: str
    members: list[str] = Field(description="the pool's members as the first task traced them")
    trace: TraceInfo | None = Field(None, description="the trace its unions run on (None: it took none)")
    units: list[PoolUnit] = Field(default_factory=list)
    planned_by: str = Field(description="the first task's record")


class PoolFiles:
    """A pool's files in the run directory."""

    def __init__(self, store: RunStore, pool: str) -> None:
        self.store, self.pool = store, pool
        self.folder = store.run.inside(*Path(POOLS).parts)

    def make_folder(self) -> None:
        with writing(self.folder):
            self.folder.mkdir(parents=True, exist_ok=True)

    @property
    def plan_path(self) -> Path:
        return self.folder / f"{self.pool}.json"

    @property
    def heartbeat(self) -> Path:
        return self.folder / f"{self.pool}.alive"

    def unit_record(self, unit: int) -> str:
        return f"{BATCH}/tasks/{self.pool}-{unit}.json"

    def write_plan(self, plan: PoolPlan) -> None:
        self.store.write_text(f"{POOLS}/{self.pool}.json", plan.model_dump_json())

    def read_plan(self) -> PoolPlan | str | None:
        """The pool's plan; why it cannot be read; None while there is none."""
        if not os.path.lexists(self.plan_path):
            return None
        try:
            return read_model(self.plan_path, PoolPlan, MAX_PLAN_BYTES)
        except RunFileDamaged as exc:
            return f"{POOLS}/{self.pool}.json is damaged ({exc.why})"

    def claim_unit(self, unit: int, claim: str) -> bool:
        """Take unit `unit` (False: another task has it). O_EXCL is atomic on NFS too."""
        return created(self.folder / f"{self.pool}-{unit}.claim", claim)

    def unit_holder(self, unit: int) -> str | None:
        """What the task that took unit `unit` wrote in its claim (None: none took it, or it cannot be read)."""
        try:
            return (self.folder / f"{self.pool}-{unit}.claim").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def beat(self) -> None:
        with contextlib.suppress(OSError):
            self.heartbeat.touch()

    def last_beat(self) -> int | None:
        try:
            return os.stat(self.heartbeat).st_mtime_ns
        except OSError:
            return None


def earlier_pool(store: RunStore, names: Sequence[str], pool: str) -> PoolPlan | None:
    """The run's latest earlier pool (a resumed run's) that traced every one of `names`, with its trace: whose trace a
    resume's first task asks for again, so that it finds it kept rather than tracing the application again."""
    wanted = set(names)
    found = [p for p in pool_plans(store) if p.pool != pool and p.trace is not None and wanted <= set(p.members)]
    return found[-1] if found else None


def first_tasks(store: RunStore) -> list[str]:
    """The records of the run's pools' first tasks (each holds its pool's trace), in the order the run made them."""
    return [plan.planned_by for plan in pool_plans(store)]


def pool_plans(store: RunStore) -> list[PoolPlan]:
    """Every pool plan of the run that can be read, in the order the run made them."""
    folder = store.run.inside(*Path(POOLS).parts)
    paths = [p for p in folder.glob("p*.json") if not p.is_symlink()] if folder.is_dir() else []
    plans = [plan for path in paths if isinstance(plan := PoolFiles(store, path.stem).read_plan(), PoolPlan)]
    return sorted(plans, key=lambda plan: _order(plan.pool))


def _order(pool: str) -> tuple[int, ...]:
    """p<submission>.<index>, in the order the run made them."""
    parts = pool[1:].split(".")
    return tuple(int(part) for part in parts if part.isdigit())


def nothing_left(store: RunStore, pool: str) -> bool:
    """Every unit of the pool's plan is taken (False while there is no plan: the task waits for it)."""
    files = PoolFiles(store, pool)
    plan = files.read_plan()
    return isinstance(plan, PoolPlan) and all(files.unit_holder(k) is not None for k in range(len(plan.units)))


@contextlib.contextmanager
def beating(files: PoolFiles) -> Iterator[None]:
    """The first task's heartbeat while it traces and plans: second-stage tasks wait on it."""
    files.make_folder()
    files.beat()
    done = threading.Event()

    def beat() -> None:
        while not done.wait(HEARTBEAT_S):
            files.beat()

    thread = threading.Thread(target=beat, name="pool-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def wait_for_plan(files: PoolFiles, stop: StopRequest, wait: bool = True) -> PoolPlan | str:
    """The pool's plan, once its first task writes it; or why none will come (the first task stopped beating, never
    began, or the run is stopping; without `wait`, the first task has ended: a plan not there now never comes)."""
    started = last_change = time.monotonic()
    last = files.last_beat()
    while not stop.level:
        plan = files.read_plan()
        if plan is not None:
            return plan
        if not wait:
            return f"the first task of pool {files.pool} ended without writing its plan"
        beat, now = files.last_beat(), time.monotonic()
        if beat != last:
            last, last_change = beat, now
        if beat is None and now - started > FIRST_S:
            return f"the first task of pool {files.pool} did not begin within {FIRST_S:.0f} s"
        if beat is not None and now - last_change > LOST_S:
            silent = f"no heartbeat for {LOST_S:.0f} s"
            return f"the first task of pool {files.pool} stopped without writing its plan ({silent})"
        stop.sleep(POLL_S)
    return "the task is stopping"
