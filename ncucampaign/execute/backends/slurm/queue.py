"""Asking Slurm about arrays: which are still queued or running, through Slurm's own commands
(squeue: no accounting database is needed, and `sacct` fails without one)."""

from __future__ import annotations

import shutil
from collections.abc import Iterable

from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.process.short import run_captured

SLURM_TIMEOUT_S = 120.0


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
