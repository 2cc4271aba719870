"""The Slurm backend's submitting side: an open run directory's pending units as a job array, through Slurm's
own commands (sbatch --parsable), so nothing must match the cluster's Slurm version."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ncucampaign.backends.batch.submission import Draft
from ncucampaign.backends.slurm.queue import SLURM_BACKEND, SLURM_TIMEOUT_S, slurm_command
from ncucampaign.backends.slurm.script import batch_script
from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.open_run import OpenRun
from ncucampaign.execute.process.short import run_captured
from ncucampaign.plan.units import ArrayTask

# What a cluster takes in one array when `scontrol show config` cannot say: Slurm's default MaxArraySize (1001: task
# indices 0-1000), which a site may raise or lower.
DEFAULT_MAX_ARRAY = 1001


def max_array_tasks() -> int:
    """How many tasks one array may hold here: MaxArraySize (indices 0 to MaxArraySize - 1), no more than
    MaxJobCount (every pending task is a job), as `scontrol show config` says; Slurm's default where it cannot."""
    try:
        code, out = run_captured([slurm_command("scontrol"), "show", "config"], SLURM_TIMEOUT_S)
    except EnvironmentProblem:
        return DEFAULT_MAX_ARRAY
    found = {}
    for line in out.splitlines() if code == 0 else []:
        name, _, value = (part.strip() for part in line.partition("="))
        if name in ("MaxArraySize", "MaxJobCount") and value.isdigit() and int(value) > 0:
            found[name] = int(value)
    return min(found.get("MaxArraySize", DEFAULT_MAX_ARRAY), found.get("MaxJobCount", DEFAULT_MAX_ARRAY))


@dataclass(frozen=True)
class SlurmSender:
    """Slurm's part of a submission (batch/submission.py): an array's batch script, sent with sbatch --parsable;
    arrays of at most `most` tasks (max_array_tasks())."""

    slurm_args: Sequence[str]
    most: int
    backend: str = SLURM_BACKEND
    holds_back: bool = True  # --dependency=afterany: a pool's second stage starts once its first task ends

    def draft(self, run: OpenRun, number: int, tasks: Sequence[ArrayTask], after: Sequence[str]) -> Draft:
        script = batch_script(
            campaign=run.plan.campaign,
            run_dir=run.store.run.root,
            array=number,
            tasks=tasks,
            python=sys.executable,
            slurm_args=self.slurm_args,
            after=after,
        )
        return Draft("sbatch", script, sbatch, also=("array.sbatch",))  # array.sbatch: the newest, as README shows


def sbatch(path: Path) -> str:
    """Submit the script at `path`: the array's job id."""
    code, out = run_captured([slurm_command("sbatch"), "--parsable", str(path)], SLURM_TIMEOUT_S)
    if code == 0 and out.strip():
        return out.strip().splitlines()[-1].split(";")[0]
    detail = out.strip().splitlines()[-1] if out.strip() else f"exit code {code}"
    raise EnvironmentProblem(f"sbatch refused the array's script: {detail}")
