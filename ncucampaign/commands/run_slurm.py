"""`run FILE --slurm`: create the run directory, submit its units as a Slurm job array, and with
`--wait` follow it until it ends and collect its records. `run --resume RUN_DIR` of such a run
collects first; with `--slurm` it submits a new array over the targets that are not ok."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from functools import partial
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ncucampaign.commands.common import out_console
from ncucampaign.commands.progress import final_table
from ncucampaign.commands.run_request import RunRequest
from ncucampaign.commands.slurm_common import collect_run, describe
from ncucampaign.commands.submission import open_and_submit, submitted
from ncucampaign.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TARGETS_FAILED, EnvironmentProblem, UsageError, printable
from ncucampaign.execute.open_run import OpenRun
from ncucampaign.execute.prepare import RunSettings
from ncucampaign.execute.process.signals import StopRequest, stop_on_signals
from ncucampaign.execute.rundir.manifest import Manifest
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.slurm.files import SlurmFiles
from ncucampaign.execute.slurm.queue import refuse_while_active, slurm_command
from ncucampaign.execute.slurm.submit import submit_array
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.slurm import check_slurm_args
from ncucampaign.results.reading.runs import load_run
from ncucampaign.spec.loader import LoadedCampaign

POLL_S = 1.0  # how often --wait asks squeue; a Slurm scheduler cycle is about that long


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


def progress_line(manifest: Manifest) -> str:
    """'waiting for Slurm array job 4242: 3 ok, 1 running, 5 pending, 1 no_kernels'."""
    counts = Counter(target.status.value for target in manifest.targets)
    jobs = ", ".join(a.job_id for a in manifest.slurm_arrays if a.job_id)
    what = "Kubernetes Job" if manifest.slurm_arrays and manifest.slurm_arrays[-1].backend == "kubernetes" else (
        "Slurm array job"
    )  # fmt: skip
    order = ["ok", "running", "pending"]
    parts = [f"{counts[s]} {s}" for s in order if counts[s]]
    parts += [f"{n} {s}" for s, n in sorted(counts.items()) if s not in order]
    return f"waiting for {what} {jobs}: {', '.join(parts)}"


def before_resume(run_dir: Path) -> None:
    """A run submitted to Slurm: nothing may run while its arrays do, and their records come first."""
    loaded = load_run(run_dir)
    if not loaded.manifest.slurm_arrays:
        return
    store, collected = collect_run(loaded)
    if any(a.backend == "kubernetes" for a in loaded.manifest.slurm_arrays):
        if not collected.queue_known:
            raise EnvironmentProblem(f"--resume {store.run.root}: the Kubernetes API cannot say whether its Job runs")
        if collected.active:
            jobs = ", ".join(sorted(collected.active))
            raise UsageError(f"--resume {store.run.root}: Kubernetes Job {jobs} of this run still runs; wait for it")
        return
    refuse_while_active(sorted(collected.active), f"--resume {store.run.root}")


def retire_rerun_claims(opened: OpenRun) -> None:
    """A local --resume of a run submitted to Slurm: the targets it reruns here must never again be
    collected from their old tasks' records."""
    if opened.settings.resume is None or not opened.manifest.slurm_arrays:
        return
    files, why = SlurmFiles(opened.store), f"resume-{len(opened.manifest.resumed)}"
    for inv in opened.to_run:
        files.retire_claim(inv.name, why)


def submit(loaded: LoadedCampaign, plan: Plan, settings: RunSettings, request: RunRequest) -> int:
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


def wait(root: Path, stop: StopRequest, console: Console) -> int:
    """Follow the run's array or Job until it ends: on a terminal, a progress bar of the targets that
    ended, with the counts; otherwise (a log, CI) a line whenever a target changes state."""
    shown = ""
    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True, disable=not console.is_terminal,
    )  # fmt: skip
    with bar:
        task = bar.add_task("waiting", total=None)
        while True:
            store, collected = collect_run(load_run(root))
            if collected.done or stop.level:
                break
            progress = progress_line(collected.manifest)
            ended = sum(t.status not in (Status.PENDING, Status.RUNNING) for t in collected.manifest.targets)
            bar.update(task, description=progress, completed=ended, total=len(collected.manifest.targets))
            if progress != shown and not console.is_terminal:  # a line whenever a target changes state
                console.print(progress, highlight=False, markup=False)
            shown = progress
            stop.sleep(POLL_S)
    console.print(final_table(collected.manifest, str(store.run.root)))
    for line in describe(collected):
        console.print(line, highlight=False)
    if stop.level:
        print("ncucampaign: stopped waiting; the array goes on (collect it later)", file=sys.stderr)
        return EXIT_INTERRUPTED
    ok = all(t.status == Status.OK for t in collected.manifest.targets)
    return EXIT_OK if ok else EXIT_TARGETS_FAILED
