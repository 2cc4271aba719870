"""`ncucampaign <backend>-task RUN_DIR --array N`: what one task of a submission runs, for each batch backend of the
table (slurm-task, k8s-task); its script or Job calls it, it is not meant to be typed. The backend says which task
this is and where it runs (backends/contract.py); the task runs its listed targets, claimed."""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

from ncucampaign.backends.contract import BatchSystem
from ncucampaign.backends.systems import BATCH
from ncucampaign.commands.command import Command
from ncucampaign.commands.running.task import array_listing, run_listed_task, task_names
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.results.reading.runs import load_run


def add_arguments(backend: BatchSystem[Any], parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN_DIR")
    parser.add_argument("--array", type=int, required=True, metavar="N", help="the submission's number")
    if backend.words.task_index_help:
        parser.add_argument("--index", type=int, required=True, metavar="I", help=backend.words.task_index_help)


def run(backend: BatchSystem[Any], args: argparse.Namespace) -> int:
    loaded_run = load_run(args.run)
    listing = array_listing(loaded_run.root, args.array)
    index = backend.task_index(listing, args.array, getattr(args, "index", None))
    names = task_names(listing, args.array, index)
    where = backend.task_placement(RunStore.open(loaded_run.root), listing, index)
    return run_listed_task(loaded_run, listing, args.array, names, where, backend.words.task_command)


COMMANDS = tuple(
    Command(backend.words.task_command, backend.words.task_help, partial(add_arguments, backend), partial(run, backend))
    for backend in BATCH.values()
)
