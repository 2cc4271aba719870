"""Asking Slurm which arrays are still queued or running, with squeue (no accounting database needed; `sacct`
fails without one); and where an array task runs, as its environment and nvidia-smi say."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterable

from ncucampaign.backends.batch.files import BatchFiles
from ncucampaign.errors import EnvironmentProblem, UsageError
from ncucampaign.execute.process.provenance import gpu_info
from ncucampaign.execute.process.short import run_captured
from ncucampaign.execute.rundir.manifest import TaskPlacement
from ncucampaign.plan.gpus import VISIBLE

SLURM_TIMEOUT_S = 120.0

SLURM_BACKEND = "slurm"  # its name in the request, the manifest and the table (backends/systems.py)


def slurm_command(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise EnvironmentProblem(f"{name} not found on PATH: --slurm needs Slurm's client commands on this machine")
    return found


def active_jobs(job_ids: Iterable[str]) -> set[str] | None:
    """Which of these array jobs Slurm still has queued or running; None when squeue cannot tell."""
    wanted = sorted({job for job in job_ids if job})
    if not wanted:
        return set()
    try:
        squeue = slurm_command("squeue")
    except EnvironmentProblem:  # a run directory read where Slurm is not (a copy on a laptop)
        return None
    code, out = run_captured(
        [
            squeue,
            "-h",
            "-r",
            "-o",
            "%F",
            "-t",
            "PD,R,CG,S,CF,RQ,RS,RH,SI,SO,ST",
            "-j",
            ",".join(wanted),
        ],
        SLURM_TIMEOUT_S,
    )
    if code is None:
        return None
    if code != 0:  # squeue refuses job ids it has forgotten (finished long ago): ask one by one
        if len(wanted) == 1:
            return set() if "Invalid job id" in out else None
        found: set[str] = set()
        for job in wanted:
            one = active_jobs([job])
            if one is None:
                return None
            found |= one
        return found
    return {line.strip() for line in out.splitlines() if line.strip()} & set(wanted)


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
        backend=SLURM_BACKEND,
        job_id=env.get("SLURM_JOB_ID", "?"),
        array_job_id=array_job,
        array_task_id=task,
        node=env.get("SLURMD_NODENAME") or socket.gethostname(),
        cuda_visible_devices=visible,
        gpu_uuids=[known[i] for i in indices if i in known],
        record=files.record_path(array_job, task),
    )
