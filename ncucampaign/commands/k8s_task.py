"""`ncucampaign k8s-task RUN_DIR --array N`: what one pod of a submitted Indexed Job runs (the Job that
`run --k8s` creates calls it; not meant to be typed). Its unit is the Job's JOB_COMPLETION_INDEX."""

from __future__ import annotations

import argparse
import os

from ncucampaign.commands.running.task import array_listing, run_listed_task, task_names
from ncucampaign.errors import UsageError
from ncucampaign.execute.backends.batch.files import BatchFiles
from ncucampaign.execute.backends.k8s.settings import KUBERNETES_BACKEND
from ncucampaign.execute.backends.k8s.task import pod_index, pod_placement
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.results.reading.runs import load_run


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("k8s-task", help="(used by run --k8s's Job) run one index of an Indexed Job")
    parser.add_argument("run", metavar="RUN_DIR")
    parser.add_argument("--array", type=int, required=True, metavar="N", help="the submission's number")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    loaded_run = load_run(args.run)
    listing = array_listing(loaded_run.root, args.array)
    job = listing.get("job_id")
    if not isinstance(job, str) or listing.get("backend") != KUBERNETES_BACKEND:
        raise UsageError(f"array {args.array} of {loaded_run.root} is not a Kubernetes Job")
    names = task_names(listing, args.array, pod_index(os.environ))
    where = pod_placement(BatchFiles(RunStore.open(loaded_run.root)), job, os.environ)
    return run_listed_task(loaded_run, listing, args.array, names, where, "k8s-task")
