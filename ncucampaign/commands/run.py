"""`ncucampaign run FILE`: run the campaign into a run directory (or `--resume` one). A short pipeline over one
RunRequest: its backend (backends/systems.py), the campaign and plan, the checks, the settings; then the
run directory is opened, the backend starts or submits it, and what it did is shown."""

from __future__ import annotations

import argparse
import shutil
import sys
from typing import Any

from ncucampaign.backends.contract import Backend, Prepared
from ncucampaign.backends.systems import BACKENDS
from ncucampaign.commands.parts.command import Command
from ncucampaign.commands.parts.common import (
    file_from_only,
    installed_listing,
    print_warnings,
    refused_by,
    runs_root,
)
from ncucampaign.commands.parts.consoles import out_console
from ncucampaign.commands.parts.progress import ConsoleReporter
from ncucampaign.commands.running.batch import before_resume, retire_rerun_claims
from ncucampaign.commands.running.closing import show
from ncucampaign.commands.running.request import add_run_arguments, request_from
from ncucampaign.commands.running.resume import campaign_and_plan, latest_begun, resumed_run
from ncucampaign.commands.running.steps import check_jobs_per_gpu, dry_run, gpu_list, local_ncu
from ncucampaign.errors import EXIT_INTERRUPTED, UsageError, printable
from ncucampaign.execute.open_run import open_run
from ncucampaign.execute.prepare import RunSettings
from ncucampaign.execute.process.signals import StopRequest, stop_on_signals
from ncucampaign.execute.resume import resume_command
from ncucampaign.execute.rundir.request import RunRequest
from ncucampaign.own_time import CLOCK, PLANNING, START_UP, since_process_start
from ncucampaign.plan.expand import Plan
from ncucampaign.results.reading.records import NcuReportReader
from ncucampaign.results.run_summary import FOLD_AT
from ncucampaign.spec.loader import LoadedCampaign
from ncucampaign.spec.ncu_catalog import report_suffix


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_arguments(parser)
    parser.add_argument(
        "--all", action="store_true", help=f"the final table's every row (over {FOLD_AT} targets: those not ok)"
    )


def run(args: argparse.Namespace) -> int:
    file_from_only(args)
    return run_request(request_from(args), every_row=args.all)


def run_request(request: RunRequest, every_row: bool = False) -> int:
    """`run` as asked (from the command line, or by `ab`); `every_row`: the final table unfolded."""
    CLOCK.reset()
    CLOCK.add(START_UP, since_process_start() or 0.0)
    try:
        with CLOCK.phase(PLANNING):  # what the stages below do not count as theirs (own_time)
            return _run(request, every_row)
    except KeyboardInterrupt:  # before the run's own handler (execute): no run directory yet
        print("ncucampaign: interrupted before the run began: nothing was started or recorded", file=sys.stderr)
        return EXIT_INTERRUPTED


def _run(request: RunRequest, every_row: bool) -> int:
    resumed = resumed_run(request.resume)
    if request.file is None and resumed is None:
        raise UsageError("run needs a campaign FILE (or --resume RUN_DIR)")
    backend = BACKENDS[request.backend.name]
    backend.check(request)  # first: before its tools are looked for, or the campaign read
    loaded, plan = campaign_and_plan(request, resumed)
    prepared = backend.prepare(request.backend, loaded, plan, runs_root(request.out, loaded))
    root = prepared.runs_root
    if request.dry_run:
        return dry_run(plan, root / plan.campaign / "<run-id>" / "reports", report_suffix(installed_listing(plan.ncu)))
    check_jobs_per_gpu(request)
    gpus = gpu_list(request.gpus)
    if request.resume == "latest":
        resumed = resumed_run(str(latest_begun(root, plan.campaign)))
    if resumed is not None:
        resumed = before_resume(resumed)
        request, loaded, plan = resumed.keep(request, loaded, plan)  # with the run's own ncu, unless one is named
    remote_ncu = prepared.ncu_elsewhere and shutil.which(plan.ncu) is None
    ncu_path, installed = local_ncu(plan, remote_ncu)
    if resumed is not None:
        resumed.same_ncu(ncu_path, installed)
    refused = refused_by(print_warnings(loaded, plan, installed, sys.stderr))
    backend.before_opening(prepared, resumed.root if resumed else root.absolute() / plan.campaign)
    settings = RunSettings(
        runs_root=root,
        ncu_path=ncu_path,
        reader=NcuReportReader(ncu_path),
        command_line=tuple(sys.argv),
        request=request,
        gpus=gpus,
        resume=resumed.root if resumed else None,
        resumed=resumed.manifest if resumed else None,
        resumed_stamp=resumed.stamp if resumed else None,
        share=not request.no_share,
        installed=installed,
        weigh=request.weigh or loaded.campaign.weigh,
        remote_ncu=remote_ncu,
        refused=refused,
    )
    return execute(backend, prepared, loaded, plan, settings, every_row)


def execute(
    backend: Backend[Any],
    prepared: Prepared[Any],
    loaded: LoadedCampaign,
    plan: Plan,
    settings: RunSettings,
    every_row: bool = False,
) -> int:
    """Open the run directory and have the backend start it, with the progress display and Ctrl-C
    handling; then show what it did."""
    stop = StopRequest()
    console = out_console()
    reporter = ConsoleReporter(
        console, live=False if settings.request.show_output else None, stopping=backend.words.stopping
    )
    with stop_on_signals(stop, reporter.stopping):  # a late Ctrl-C only sets a flag, also while printing
        opened = open_run(loaded, plan, settings)
        for warning in opened.warnings:
            print(f"ncucampaign: warning: {printable(warning)}", file=sys.stderr)
        for note in opened.notes:  # before the progress display takes the terminal
            print(f"ncucampaign: note: {printable(note)}", file=sys.stderr)
        with reporter:
            try:
                retire_rerun_claims(opened)
            except BaseException:
                opened.close()
                raise
            started = backend.start(prepared, opened, reporter, stop)
        code = show(started, plan, stop, settings, every_row)
        if started.result is not None and started.result.manifest.state == "interrupted":
            print(f"ncucampaign: interrupted: {resume_command(started.root)} finishes the run", file=sys.stderr)
    # A Ctrl-C that came as the run ended (while its table printed) was still a Ctrl-C: 130.
    return EXIT_INTERRUPTED if stop.by_signal else code


COMMAND = Command("run", "run the campaign; reports and manifest go to a run directory", add_arguments, run)
