"""A submission's task list, slurm/array-<n>.json: the targets each task of a batch submission runs. A run-directory
file, so it lives here with the others (every backend and the batch room read it; backends/contract.py
names it in the backends' verbs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field

from ncucampaign.errors import UsageError
from ncucampaign.execute.rundir.reading import RunFileDamaged, read_model
from ncucampaign.execute.rundir.result_records import Record
from ncucampaign.execute.rundir.store import RunStore

BATCH = "slurm"  # the folder batch systems share in a run directory (named before Kubernetes was one)
MAX_TASK_LIST_BYTES = 64 << 20  # 20,000 targets' names in tasks of their own: about 1 MB


class TaskList(Record):
    """slurm/array-<n>.json: the targets each task of a submission runs, and how."""

    tasks: list[Annotated[list[str], Field(min_length=1)]] = Field(description="per task, the targets it runs")
    share: bool = True
    backend: str | None = Field(None, description="the batch system's name, where it is not Slurm")
    job_id: str | None = Field(None, description="the submission as its system names it (a Kubernetes Job)")

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
