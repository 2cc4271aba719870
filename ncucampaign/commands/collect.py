"""`ncucampaign collect RUN_DIR`: merge what a Slurm array's tasks or a Kubernetes Job's pods recorded
into manifest.json."""

from __future__ import annotations

import argparse

from ncucampaign.commands.parts.command import Command
from ncucampaign.commands.parts.consoles import out_console
from ncucampaign.commands.parts.progress import final_table
from ncucampaign.commands.running.batch import collect_run, describe
from ncucampaign.errors import EXIT_OK, EXIT_TARGETS_FAILED, UsageError
from ncucampaign.execute.rundir.status import Status
from ncucampaign.results.reading.runs import load_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN_DIR", help="a run directory (or its campaign's folder)")


def run(args: argparse.Namespace) -> int:
    store, collected = collect_run(load_run(args.run).root)
    if not collected.manifest.submissions:
        raise UsageError(f"{store.run.root}: no Slurm array or Kubernetes Job was submitted for it (--slurm, --k8s)")
    console = out_console()
    console.print(final_table(collected.manifest, str(store.run.root)))
    for line in describe(collected):
        console.print(line, highlight=False)
    ok = all(t.status == Status.OK for t in collected.manifest.targets)
    return EXIT_OK if ok or collected.active else EXIT_TARGETS_FAILED


COMMAND = Command(
    "collect",
    "merge the records of a run's Slurm tasks or Kubernetes pods into its manifest (--slurm, --k8s)",
    add_arguments,
    run,
)
