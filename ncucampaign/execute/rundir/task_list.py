"""A submission's task list, slurm/array-<n>.json: the targets each task of a batch submission runs. A run-directory
file, so it lives here with the others (every backend and the batch room read it; backends/contract.py
names it in the backends' verbs)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from ncucampaign.errors import UsageError
from ncucampaign.execute.rundir.reading import RunFileDamaged, read_model
from ncucampaign.execute.rundir.result_records import Record
from ncucampaign.execute.rundir.store import RunStore

BATCH = "slurm"  # the folder batch systems share in a run directory (named before Kubernetes was one)
MAX_TASK_LIST_BYTES = 64 << 20  # 20,000 targets' names in tasks of their own: about 1 MB


class TaskRole(Record):
    """A task serving one stage of a trace pool (backends/batch/pools.py): `trace` takes the pool's trace, plans its
    unions and runs some; `unions` runs the unions that plan holds, each taken by one task."""

    pool: str = Field(description="the pool's name in the run: p<submission>.<index> of the task that takes its trace")
    stage: Literal["trace", "unions"]
    then_unions: bool = Field(
        False, description="a first task that then takes unions too (its second stage cannot be held back for it)"
    )
    waits: bool = Field(True, description="a second-stage task that may start before its first ends: it waits")


class TaskList(Record):
    """slurm/array-<n>.json: the targets each task of a submission runs, and how."""

    tasks: list[list[str]] = Field(description="per task, the targets it claims (none: a pool's second stage)")
    share: bool = True
    backend: str | None = Field(None, description="the batch system's name, where it is not Slurm")
    job_id: str | None = Field(None, description="the submission as its system names it (a Kubernetes Job)")
    roles: list[TaskRole | None] | None = Field(None, description="per task, the pool stage it serves (None: none)")

    @model_validator(mode="after")
    def _each_task_has_work(self) -> TaskList:
        roles = self.roles or []
        if roles and len(roles) != len(self.tasks):
            raise ValueError(f"{len(roles)} roles for {len(self.tasks)} tasks")
        for index, names in enumerate(self.tasks):
            role = roles[index] if roles else None
            if not names and (role is None or role.stage != "unions"):
                raise ValueError(f"task {index} runs nothing")
        return self

    def role(self, index: int) -> TaskRole | None:
        return self.roles[index] if self.roles else None

    def write(self, store: RunStore, number: int) -> Path:
        return store.write_json(f"{BATCH}/array-{number}.json", self.model_dump(exclude_none=True))

    @classmethod
    def read(cls, root: Path, number: int) -> TaskList:
        try:
            return read_model(root / BATCH / f"array-{number}.json", cls, MAX_TASK_LIST_BYTES)
        except RunFileDamaged as exc:
            raise UsageError(
                f"{BATCH}/array-{number}.json is damaged: cannot read the array's tasks: {exc.why}"
            ) from None
