"""Where a Slurm array task runs, from the environment Slurm gives it."""

from __future__ import annotations

import os
import socket

from ncucampaign.errors import UsageError
from ncucampaign.execute.backends.batch.files import BatchFiles
from ncucampaign.execute.process.provenance import gpu_info
from ncucampaign.execute.rundir.manifest import TaskPlacement
from ncucampaign.plan.gpus import VISIBLE


def placement(files: BatchFiles) -> TaskPlacement:
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
    return TaskPlacement(
        job_id=env.get("SLURM_JOB_ID", "?"),
        array_job_id=array_job,
        array_task_id=task,
        node=env.get("SLURMD_NODENAME") or socket.gethostname(),
        cuda_visible_devices=visible,
        gpu_uuids=[known[i] for i in indices if i in known],
        record=files.record_path(array_job, task),
    )
