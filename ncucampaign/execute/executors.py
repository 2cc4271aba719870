"""Executors: when and where a batch of units runs (in turn, or side by side in GPU lanes), each by
`session.run_unit`; records come back as they finish. A new one implements `Executor.run` (runner.executor_for)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Protocol

from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.manifest import TargetRecord
from ncucampaign.plan.units import Unit, gpus_needed


class Session(Protocol):
    """What an executor may ask of the run it works for."""

    stop: StopRequest

    def run_unit(self, unit: Unit, gpus: tuple[str, ...] | None, lane: str | None) -> list[TargetRecord]: ...
    def target_finished(self, record: TargetRecord) -> None: ...


class Executor(Protocol):
    def run(self, batch: Sequence[Unit], session: Session) -> list[TargetRecord]: ...


class SequentialExecutor:
    """One invocation after another, on whatever GPUs the invocation's own environment names."""

    def run(self, batch: Sequence[Unit], session: Session) -> list[TargetRecord]:
        records: list[TargetRecord] = []
        for unit in batch:
            if session.stop.level:
                break  # stopping: nothing more starts
            for record in session.run_unit(unit, None, None):
                records.append(record)
                session.target_finished(record)
        return records


@dataclass(frozen=True)
class Lane:
    gpu: str
    slot: int = 0

    @property
    def label(self) -> str:
        return f"GPU {self.gpu}" + (f"/{self.slot}" if self.slot else "")


class GpuLanesExecutor:
    """Independent invocations side by side, one (or `jobs_per_gpu`) per GPU, each pinned; an invocation that
    names GPUs waits until those lanes are free."""

    def __init__(self, gpus: Sequence[str], jobs_per_gpu: int = 1) -> None:
        self.lanes = [Lane(gpu, slot) for slot in range(jobs_per_gpu) for gpu in gpus]

    def run(self, batch: Sequence[Unit], session: Session) -> list[TargetRecord]:
        queue, free = list(batch), list(self.lanes)
        running: dict[Future[list[TargetRecord]], list[Lane]] = {}
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
                        for record in future.result():
                            records.append(record)
                            session.target_finished(record)
            except BaseException:
                session.stop.request(1)  # a failing worker stops the others before the pool waits for them
                raise
        return records

    def _start_what_fits(
        self,
        pool: ThreadPoolExecutor,
        queue: list[Unit],
        free: list[Lane],
        running: dict[Future[list[TargetRecord]], list[Lane]],
        session: Session,
    ) -> None:
        while queue and free:
            picked = next(((unit, taken) for unit in queue if (taken := self._take(unit, free))), None)
            if picked is None:
                return  # every waiting unit needs a GPU that is busy
            unit, taken = picked
            queue.remove(unit)
            for lane in taken:
                free.remove(lane)
            gpus = tuple(lane.gpu for lane in taken)
            running[pool.submit(session.run_unit, unit, gpus, taken[0].label)] = taken

    @staticmethod
    def _take(unit: Unit, free: list[Lane]) -> list[Lane] | None:
        """The free lanes this unit can run on now (several when it names several GPUs)."""
        needed = gpus_needed(unit)
        if needed is None:
            return free[:1]
        taken: list[Lane] = []
        for gpu in needed:
            lane = next((lane for lane in free if lane.gpu == gpu and lane not in taken), None)
            if lane is None:
                return None
            taken.append(lane)
        return taken
