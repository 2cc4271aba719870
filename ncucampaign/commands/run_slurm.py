"""`run FILE --slurm`: create the run directory, submit its units as a Slurm job array, and with
`--wait` follow it until it ends and collect its records. `run --resume RUN_DIR` of such a run
collects first; with `--slurm` it submits a new array over the targets that are not ok."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

from ncucampaign.commands.batch_runs import wait
from ncucampaign.commands.common import out_console
from ncucampaign.commands.run_request import RunRequest
from ncucampaign.commands.submission import open_and_submit, submitted
from ncucampaign.errors import EXIT_OK, UsageError, printable
from ncucampaign.execute.backends.slurm.queue import slurm_command
from ncucampaign.execute.backends.slurm.submit import submit_array
from ncucampaign.execute.prepare import RunSettings
from ncucampaign.execute.process.signals import StopRequest, stop_on_signals
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.slurm import check_slurm_args
from ncucampaign.spec.loader import LoadedCampaign


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--slurm", action="store_true", help="submit the targets as a Slurm job array (one task per target or group)"
    )
    parser.add_argument(
        "--slurm-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="an sbatch option for the array, e.g. --slurm-arg=--partition=gpu (repeatable)",
    )
    parser.add_argument(
        "--wait", action="store_true", help="with --slurm or --k8s: follow the array or Job until it ends, then collect"
    )


def check(request: RunRequest) -> None:
    if not request.slurm:
        if request.slurm_args or (request.wait and not request.k8s):
            raise UsageError("--slurm-arg goes with --slurm, and --wait with --slurm or --k8s")
        return
    if request.gpus or request.jobs_per_gpu != 1 or request.show_output:
        raise UsageError("--slurm gives each task the GPUs Slurm allocates: drop --gpus, --jobs-per-gpu, --show-output")
    problem = check_slurm_args(list(request.slurm_args))
    if problem:
        raise UsageError(problem)
    for command in ("sbatch", "squeue"):  # before a run directory is created for nothing
        slurm_command(command)
    for command in ("sbatch", "squeue"):  # before a run directory is created for nothing
        slurm_command(command)


def check_run_path(folder: Path) -> None:
    """sbatch reads the script's `#SBATCH --output=` line as it reads a command line of its own: blanks
    end the value, quotes and `\\` are taken away, `#` starts a comment, and `%` starts a file-name
    pattern (%j, %A, ...). A run directory holding any of them would send every task's output
    elsewhere, or have the script refused after the run directory was made (issue 40: `--out "rq'x"`)."""
    odd = sorted({char for char in str(folder) if char in "%\\'\"#" or char.isspace() or not char.isprintable()})
    if odd:
        shown = " and ".join(repr(char) for char in odd)
        raise UsageError(
            f"{printable(str(folder))}: a run directory for --slurm cannot hold {shown} (sbatch reads them in its "
            "script's file names as blanks, quotes, comments or patterns); choose another --out"
        )


def submit(request: RunRequest, loaded: LoadedCampaign, plan: Plan, settings: RunSettings) -> int:
    check_run_path(settings.resume or settings.runs_root.absolute() / plan.campaign)
    if settings.weigh:
        print(
            "ncucampaign: note: the timing pass (weigh) is not run in Slurm arrays; findings of this run will rank "
            "by ncu's own estimates",
            file=sys.stderr,
        )
    stop = StopRequest()
    console = out_console()
    # From here a Ctrl-C only sets a flag: a submission is finished and recorded, then waiting stops.
    with stop_on_signals(stop, lambda _level: None):
        submission = partial(submit_array, slurm_args=list(request.slurm_args))
        run, array = open_and_submit(loaded, plan, settings, submission, "--slurm")
        if array is None:
            console.print(f"{plan.campaign}: every target is ok; nothing to submit", highlight=False)
            return EXIT_OK
        root = run.store.run.root
        console.print(
            f"{plan.campaign}: submitted Slurm array job {array.job_id} ({len(array.tasks)} tasks) for {root}\n"
            f"  follow:  squeue -j {array.job_id}\n"
            f"  collect: ncucampaign collect {root}\n"
            f"  cancel:  scancel -t PENDING {array.job_id}; scancel -b -s INT {array.job_id}\n"
            "           (-b -s INT alone stops the running tasks, which record what they did, but lets pending ones "
            f"start; then: ncucampaign run --resume {root} --slurm)",
            highlight=False,
        )
        return wait(root, stop, console) if request.wait else submitted(stop)
