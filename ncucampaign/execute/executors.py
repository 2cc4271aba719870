"""Executors: the seam between the runner and how invocations are run.

The runner hands an executor a batch of planned invocations and a `Session`; the executor decides
when and where each one runs and calls `session.run_target` for it; records come back in the order
they finished. Today: one after another, or side by side in GPU lanes. A new executor (shared runs,
Slurm arrays) implements `Executor.run` and is chosen in `runner.executor_for`.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Protocol

from ncucampaign.execute.manifest import TargetRecord
from ncucampaign.execute.signals import StopRequest
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.gpus import named_gpus


class Session(Protocol):
    """What an executor may ask of the run it works for."""

    stop: StopRequest

    def run_target(self, invocation: Invocation, gpus: tuple[str, ...] | None, lane: str | None) -> TargetRecord: ...
    def target_finished(self, record: TargetRecord, position: int, total: int) -> None: ...


class Executor(Protocol):
    def run(self, batch: Sequence[Invocation], session: Session) -> list[TargetRecord]: ...


class SequentialExecutor:
    """One invocation after another, on whatever GPUs the invocation's own environment names."""

    def run(self, batch: Sequence[Invocation], session: Session) -> list[TargetRecord]:
        records: list[TargetRecord] = []
        for inv in batch:
            if session.stop.level:
                break  # stopping: nothing more starts
            record = session.run_target(inv, None, None)
            records.append(record)
            session.target_finished(record, len(records), len(batch))
        return records


@dataclass(frozen=True)
class Lane:
    gpu: str
    slot: int = 0

    @property
    def label(self) -> str:
        return f"GPU {self.gpu}" + (f"/{self.slot}" if self.slot else "")


class GpuLanesExecutor:
    """Independent invocations side by side, one per GPU (or `jobs_per_gpu` per GPU), each pinned.

    An invocation that names GPUs waits until those lanes are free.
    """

    def __init__(self, gpus: Sequence[str], jobs_per_gpu: int = 1) -> None:
        self.lanes = [Lane(gpu, slot) for slot in range(jobs_per_gpu) for gpu in gpus]

    def run(self, batch: Sequence[Invocation], session: Session) -> list[TargetRecord]:
        queue, free = list(batch), list(self.lanes)
        running: dict[Future[TargetRecord], list[Lane]] = {}
        records: list[TargetRecord] = []
        with ThreadPoolExecutor(max_workers=len(self.lanes), thread_name_prefix="ncu") as pool:
            try:
                while queue or running:
                    if not session.stop.level:
                        self._start_what_fits(pool, queue, free, running, session)
                    if not running:
                        break  # stopping: nothing more starts
                    done, _ = wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
                    for future in done:
                        free.extend(running.pop(future))
                        records.append(future.result())
                        session.target_finished(records[-1], len(records), len(batch))
            except BaseException:
                session.stop.request(1)  # a failing worker stops the others before the pool waits for them
                raise
        return records

    def _start_what_fits(
        self,
        pool: ThreadPoolExecutor,
        queue: list[Invocation],
        free: list[Lane],
        running: dict[Future[TargetRecord], list[Lane]],
        session: Session,
    ) -> None:
        while queue and free:
            picked = next(((inv, taken) for inv in queue if (taken := self._take(inv, free))), None)
            if picked is None:
                return  # every waiting invocation needs a GPU that is busy
            inv, taken = picked
            queue.remove(inv)
            for lane in taken:
                free.remove(lane)
            gpus = tuple(lane.gpu for lane in taken)
            running[pool.submit(session.run_target, inv, gpus, taken[0].label)] = taken

    @staticmethod
    def _take(inv: Invocation, free: list[Lane]) -> list[Lane] | None:
        """The free lanes this invocation can run on now (several when it names several GPUs)."""
        needed = named_gpus(inv)
        if needed is None:
            return free[:1]
        taken: list[Lane] = []
        for gpu in needed:
            lane = next((lane for lane in free if lane.gpu == gpu and lane not in taken), None)
            if lane is None:
                return None
            taken.append(lane)
        return taken
