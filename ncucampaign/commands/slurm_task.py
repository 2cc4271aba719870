"""`ncucampaign slurm-task RUN_DIR --array N --index I`: what one task of a submitted array runs (the
batch script `run --slurm` writes calls it; not meant to be typed)."""

from __future__ import annotations

import argparse

from ncucampaign.commands.running.task import array_listing, run_listed_task, task_names
from ncucampaign.execute.backends.batch.files import BatchFiles
from ncucampaign.execute.backends.slurm.queue import placement
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.results.reading.runs import load_run


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("slurm-task", help="(used by run --slurm's batch script) run one array task")
    parser.add_argument("run", metavar="RUN_DIR")
    parser.add_argument("--array", type=int, required=True, metavar="N", help="the submission's number")
    parser.add_argument("--index", type=int, required=True, metavar="I", help="$SLURM_ARRAY_TASK_ID")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    loaded_run = load_run(args.run)
    listing = array_listing(loaded_run.root, args.array)
    names = task_names(listing, args.array, args.index)
    where = placement(BatchFiles(RunStore.open(loaded_run.root)))
    return run_listed_task(loaded_run, listing, args.array, names, where, "slurm-task")
