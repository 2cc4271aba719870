"""The Slurm backend's submitting side: an open run directory's pending units as a job array, through Slurm's
own commands (sbatch --parsable), so nothing must match the cluster's Slurm version."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ncucampaign.backends.batch.files import BatchFiles
from ncucampaign.backends.slurm.queue import SLURM_TIMEOUT_S, slurm_command
from ncucampaign.backends.slurm.script import batch_script
from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.open_run import OpenRun
from ncucampaign.execute.process.short import run_captured
from ncucampaign.execute.rundir.book import now_iso
from ncucampaign.execute.rundir.manifest import Submission
from ncucampaign.execute.rundir.task_list import BATCH, TaskList
from ncucampaign.plan.share.groups import share_plan
from ncucampaign.plan.units import ArrayTask, array_tasks, units_in_plan_order

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


def array_chunks(tasks: Sequence[ArrayTask], most: int) -> list[Sequence[ArrayTask]]:
    """The tasks as arrays of at most `most` tasks each (a cluster refuses a larger array whole: 1,200 targets
    were `Invalid job array specification`, and nothing ran)."""
    return [tasks[start : start + most] for start in range(0, len(tasks), max(1, most))]


def submit_arrays(run: OpenRun, slurm_args: Sequence[str]) -> list[Submission]:
    """What is left to run, one task per unit, as as many arrays as the cluster's limit asks; each one's script and
    task list written into the run directory and submitted with sbatch. A refused array stops the rest (submitted
    ones run on; --resume submits what is left)."""
    files = BatchFiles(run.store)
    files.make_folders()
    shares = share_plan(run.to_run, run.settings.share, run.settings.installed, run.settings.refused)
    chunks = array_chunks(array_tasks(units_in_plan_order(run.to_run, shares)), max_array_tasks())
    return [_submit(run, files, chunk, slurm_args) for chunk in chunks]


def _submit(run: OpenRun, files: BatchFiles, tasks: Sequence[ArrayTask], slurm_args: Sequence[str]) -> Submission:
    number = len(run.manifest.slurm_arrays) + 1
    for task in tasks:  # a target rerun by this array may be claimed again
        for name in task.names:
            files.retire_claim(name, f"array-{number}")
    script = batch_script(
        campaign=run.plan.campaign,
        run_dir=run.store.run.root,
        array=number,
        tasks=tasks,
        python=sys.executable,
        slurm_args=slurm_args,
    )
    TaskList(tasks=[list(t.names) for t in tasks], share=run.settings.share).write(run.store, number)
    path = run.store.write_text(f"{BATCH}/array-{number}.sbatch", script)
    run.store.write_text(f"{BATCH}/array.sbatch", script)
    record = Submission(
        number=number,
        job_id=None,
        submitted_at=now_iso(),
        script=run.store.run.relative(path),
        tasks=[list(t.names) for t in tasks],
    )
    code, out = run_captured([slurm_command("sbatch"), "--parsable", str(path)], SLURM_TIMEOUT_S)
    if code == 0 and out.strip():
        record.job_id = out.strip().splitlines()[-1].split(";")[0]
    run.book.commit(lambda: run.manifest.slurm_arrays.append(record))
    if record.job_id is None:  # nothing (more) runs: the run is not "running", and it says how to finish it
        run.book.commit(lambda: setattr(run.manifest, "state", "interrupted"))
        detail = out.strip().splitlines()[-1] if out.strip() else f"exit code {code}"
        raise EnvironmentProblem(f"sbatch refused the array's script: {detail}")
    run.book.commit(lambda: setattr(run.manifest, "state", "submitted"))
    return record
