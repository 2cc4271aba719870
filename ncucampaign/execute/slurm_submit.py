"""Submit a run's pending units as a Slurm job array, and ask Slurm which arrays are still alive.

Slurm's own commands are the interface (sbatch --parsable, squeue): no accounting database is needed
(`sacct` fails without one) and nothing must match the cluster's Slurm version.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterable, Sequence

from ncucampaign.errors import EnvironmentProblem, UsageError
from ncucampaign.execute.attempts import now_iso
from ncucampaign.execute.manifest import SlurmArray
from ncucampaign.execute.process import run_captured
from ncucampaign.execute.runner import CampaignRun
from ncucampaign.execute.schedule import Unit, invocations_of
from ncucampaign.execute.slurm_files import SLURM, SlurmFiles
from ncucampaign.plan.slurm import ArrayTask, batch_script

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


def refuse_while_active(job_ids: Sequence[str], what: str) -> None:
    active = active_jobs(job_ids)
    if active is None:
        raise EnvironmentProblem(f"squeue cannot say whether the run's arrays ({', '.join(job_ids)}) still run")
    if active:
        jobs = ", ".join(sorted(active))
        raise UsageError(
            f"{what}: Slurm array job {jobs} of this run is still queued or running; wait for it, or cancel "
            f"it cleanly with `scancel -b -s INT {jobs.split(',')[0]}`"
        )


def array_tasks(units: Sequence[Unit]) -> list[ArrayTask]:
    """One array task per unit: an invocation, or a group sharing one application run."""
    return [ArrayTask(tuple(i.name for i in invocations_of(u)), invocations_of(u)) for u in units]


def submit_array(run: CampaignRun, slurm_args: Sequence[str]) -> SlurmArray:
    """Write the array's script and task list into the run directory and submit it with sbatch."""
    files = SlurmFiles(run.store)
    files.make_folders()
    number = len(run.manifest.slurm_arrays) + 1
    tasks = array_tasks(run.units())
    for task in tasks:  # a target rerun by this array may be claimed again
        for name in task.names:
            files.retire_claim(name, f"array-{number}")
    if any(ch.isspace() for ch in str(run.store.run.root)):
        raise UsageError(f"{run.store.run.root}: a run directory for --slurm must have no spaces in its path")
    script = batch_script(
        campaign=run.plan.campaign,
        run_dir=run.store.run.root,
        array=number,
        tasks=tasks,
        python=sys.executable,
        slurm_args=slurm_args,
    )
    listing = {"tasks": [list(t.names) for t in tasks], "share": run.settings.share}
    run.store.write_json(f"{SLURM}/array-{number}.json", listing)
    path = run.store.write_text(f"{SLURM}/array-{number}.sbatch", script)
    run.store.write_text(f"{SLURM}/array.sbatch", script)
    record = SlurmArray(
        number=number,
        job_id=None,
        submitted_at=now_iso(),
        script=run.store.run.relative(path),
        tasks=[list(t.names) for t in tasks],
    )
    code, out = run_captured([slurm_command("sbatch"), "--parsable", str(path)], SLURM_TIMEOUT_S)
    if code == 0 and out.strip():
        record.job_id = out.strip().splitlines()[-1].split(";")[0]
    run.commit(lambda: run.manifest.slurm_arrays.append(record))
    if record.job_id is None:
        detail = out.strip().splitlines()[-1] if out.strip() else f"exit code {code}"
        raise EnvironmentProblem(f"sbatch refused {path}: {detail}")
    run.commit(lambda: setattr(run.manifest, "state", "submitted"))
    return record
