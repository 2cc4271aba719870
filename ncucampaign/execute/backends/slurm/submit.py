"""The Slurm backend's submitting side: an open run directory's pending units as a job array, through Slurm's
own commands (sbatch --parsable), so nothing must match the cluster's Slurm version."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.backends.batch.files import BATCH, BatchFiles
from ncucampaign.execute.backends.slurm.queue import SLURM_TIMEOUT_S, slurm_command
from ncucampaign.execute.open_run import OpenRun
from ncucampaign.execute.process.short import run_captured
from ncucampaign.execute.rundir.book import now_iso
from ncucampaign.execute.rundir.manifest import Submission
from ncucampaign.plan.share.groups import share_plan
from ncucampaign.plan.slurm import batch_script
from ncucampaign.plan.units import array_tasks, units_in_plan_order


def submit_array(run: OpenRun, slurm_args: Sequence[str]) -> Submission:
    """Write the array's script and task list into the run directory and submit it with sbatch: one
    task per unit of what is left to run."""
    files = BatchFiles(run.store)
    files.make_folders()
    number = len(run.manifest.slurm_arrays) + 1
    shares = share_plan(run.to_run, run.settings.share, run.settings.installed)
    tasks = array_tasks(units_in_plan_order(run.to_run, shares))
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
    listing = {"tasks": [list(t.names) for t in tasks], "share": run.settings.share}
    run.store.write_json(f"{BATCH}/array-{number}.json", listing)
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
    if record.job_id is None:  # nothing runs: the run is not "running", and it says how to finish it
        run.book.commit(lambda: setattr(run.manifest, "state", "interrupted"))
        detail = out.strip().splitlines()[-1] if out.strip() else f"exit code {code}"
        raise EnvironmentProblem(f"sbatch refused the array's script: {detail}")
    run.book.commit(lambda: setattr(run.manifest, "state", "submitted"))
    return record
