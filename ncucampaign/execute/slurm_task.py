"""One Slurm array task: claim its targets, run them with the same attempts as a local run, and keep
its own record file current (`slurm_files`); `collect` merges it into the run's manifest.

The task never takes the run directory's lock (other tasks run beside it) and never sets
CUDA_VISIBLE_DEVICES: the GPUs are the ones Slurm gave it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
from collections.abc import Sequence

from ncucampaign.errors import UsageError
from ncucampaign.execute.attempts import now_iso
from ncucampaign.execute.manifest import Manifest, SlurmPlacement
from ncucampaign.execute.provenance import gpu_info
from ncucampaign.execute.runner import CampaignRun, Reporter, RunResult, RunSettings
from ncucampaign.execute.signals import StopRequest
from ncucampaign.execute.slurm_files import SlurmFiles
from ncucampaign.execute.status import Status
from ncucampaign.execute.store import RunStore
from ncucampaign.plan.expand import Invocation, Plan
from ncucampaign.plan.gpus import VISIBLE
from ncucampaign.spec.loader import LoadedCampaign


def placement(files: SlurmFiles) -> SlurmPlacement:
    """Where this task runs, from the environment Slurm gives it."""
    env = os.environ
    if not env.get("SLURM_ARRAY_TASK_ID", "").isdigit():
        raise UsageError("slurm-task runs inside a Slurm array task (SLURM_ARRAY_TASK_ID is not set)")
    array_job, task = env.get("SLURM_ARRAY_JOB_ID", env.get("SLURM_JOB_ID", "?")), int(env["SLURM_ARRAY_TASK_ID"])
    visible = env.get(VISIBLE)
    # SLURM_JOB_GPUS holds the node's GPU indices; CUDA_VISIBLE_DEVICES may be renumbered from 0
    # where Slurm constrains devices with cgroups.
    indices = (env.get("SLURM_JOB_GPUS") or visible or "").split(",")
    known = {str(gpu.index): gpu.uuid for gpu in gpu_info() or ()}
    return SlurmPlacement(
        job_id=env.get("SLURM_JOB_ID", "?"),
        array_job_id=array_job,
        array_task_id=task,
        node=env.get("SLURMD_NODENAME") or socket.gethostname(),
        cuda_visible_devices=visible,
        gpu_uuids=[known[i] for i in indices if i in known],
        record=files.record_path(array_job, task),
    )


def slurm_gpus_kept(inv: Invocation) -> Invocation:
    """The invocation without a CUDA_VISIBLE_DEVICES of its own: Slurm's stands."""
    return dataclasses.replace(inv, env=tuple((k, v) for k, v in inv.env if k != VISIBLE))


class TaskRun(CampaignRun):
    """A campaign run over one task's targets whose manifest is the task's record file."""

    record_path: str  # the task's record file, relative to the run directory
    tag: str  # <array job>_<task>: names its shared runs

    def start(self, main: Manifest, claimed: Sequence[Invocation], where: SlurmPlacement) -> None:
        """The task's manifest: the run's, holding only the claimed targets (with their earlier attempts)."""
        previous = {record.name: record for record in main.targets}
        records = []
        for inv in claimed:
            record = previous[inv.name].model_copy(deep=True) if inv.name in previous else self._pending_record(inv)
            fresh = self._pending_record(inv)
            record.argv, record.env, record.shell_command = fresh.argv, fresh.env, fresh.shell_command
            record.status, record.slurm = Status.PENDING, where
            records.append(record)
        self.manifest = main.model_copy(
            update={
                "state": "running",
                "started_at": now_iso(),
                "ended_at": None,
                "targets": records,
                "shared_runs": [],
                "slurm_arrays": [],
            }
        )
        self.records = {record.name: record for record in records}
        self.to_run = list(claimed)
        self.store.make_folders()
        self.save()

    def save(self) -> None:
        with self._lock:
            self.store.write_json(self.record_path, self.manifest.model_dump(mode="json"))

    def shared_name(self) -> str:
        """Numbered per task: the tasks of an array write into one reports/shared/."""
        return f"shared/{self.tag}-{super().shared_name().removeprefix('shared/')}"


def run_task(
    store: RunStore,
    loaded: LoadedCampaign,
    plan: Plan,
    settings: RunSettings,
    reporter: Reporter,
    stop: StopRequest,
    main: Manifest,
    names: Sequence[str],
) -> RunResult | None:
    """Claim and run `names`; None when every one of them was claimed by another task already."""
    files = SlurmFiles(store)
    where = placement(files)
    by_name = {inv.name: slurm_gpus_kept(inv) for inv in plan.invocations}
    claim = {**where.model_dump(), "pid": os.getpid(), "claimed_at": now_iso()}
    claimed = [by_name[name] for name in names if name in by_name and files.claim(name, claim)]
    if not claimed:
        return None
    plan = dataclasses.replace(plan, invocations=tuple(claimed))
    # No lock: the tasks of an array write into the run directory side by side, each its own files.
    run = TaskRun(loaded, plan, settings, reporter, store, contextlib.ExitStack(), stop)
    run.record_path, run.tag = where.record, f"{where.array_job_id}_{where.array_task_id}"
    run.start(main, claimed, where)
    return run.execute()
