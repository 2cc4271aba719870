"""`ncucampaign <backend>-task RUN_DIR --array N`: what one task of a submission runs, for each batch backend of the
table (slurm-task, k8s-task); its script or Job calls it, it is not meant to be typed. The backend says which task
this is and where it runs (backends/contract.py); the task runs its listed targets, claimed."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path
from typing import Any

from ncucampaign.backends.batch.pools import nothing_left
from ncucampaign.backends.contract import BatchSystem
from ncucampaign.backends.systems import BATCH
from ncucampaign.commands.parts.command import Command
from ncucampaign.commands.running.task import array_listing, run_listed_task, task_names
from ncucampaign.errors import EXIT_OK
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.results.reading.runs import load_run


def add_arguments(backend: BatchSystem[Any], parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN_DIR")
    parser.add_argument("--array", type=int, required=True, metavar="N", help="the submission's number")
    if backend.words.task_index_help:
        parser.add_argument("--index", type=int, required=True, metavar="I", help=backend.words.task_index_help)


def run(backend: BatchSystem[Any], args: argparse.Namespace) -> int:
    store = RunStore.open(Path(args.run))
    listing = array_listing(store.run.root, args.array)
    index = backend.task_index(listing, args.array, getattr(args, "index", None))
    task_names(listing, args.array, index)  # an index the list has not is refused before anything else
    role = listing.role(index)
    if role is not None and role.stage == "unions" and nothing_left(store, role.pool):
        print(f"{backend.words.task_command}: every unit of pool {role.pool} is taken; nothing to do")
        return EXIT_OK  # before reading the run and planning it: a second stage has more tasks than run at once
    loaded_run = load_run(store.run.root)
    where = backend.task_placement(store, listing, index)
    return run_listed_task(loaded_run, listing, args.array, index, where, backend.words.task_command)


COMMANDS = tuple(
    Command(backend.words.task_command, backend.words.task_help, partial(add_arguments, backend), partial(run, backend))
    for backend in BATCH.values()
)
