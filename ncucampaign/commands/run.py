"""`ncucampaign run FILE`: run the campaign into a run directory (or `--resume` one). A short pipeline
over one RunRequest: the campaign and its plan, the checks, the run's settings, then the backend
(here, a Slurm array or a Kubernetes Job) that runs it."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from ncucampaign.commands import run_k8s, run_slurm
from ncucampaign.commands.batch_runs import before_resume, retire_rerun_claims
from ncucampaign.commands.common import (
    file_from_only,
    installed_listing,
    out_console,
    print_warnings,
    runs_root,
)
from ncucampaign.commands.progress import ConsoleReporter, final_table
from ncucampaign.commands.run_request import HERE, RunRequest, add_run_arguments
from ncucampaign.commands.run_resume import campaign_and_plan, keep_own_flags, latest_begun, same_selection
from ncucampaign.commands.run_steps import check_jobs_per_gpu, dry_run, gpu_list, local_ncu, samples_short
from ncucampaign.errors import EXIT_INTERRUPTED, UsageError, printable
from ncucampaign.execute.backends.k8s.system import KUBERNETES
from ncucampaign.execute.backends.local import start_run
from ncucampaign.execute.backends.slurm.system import SLURM
from ncucampaign.execute.prepare import RunSettings
from ncucampaign.execute.process.signals import StopRequest, stop_on_signals
from ncucampaign.execute.resume import unfinished_note
from ncucampaign.execute.rundir.store import latest_run
from ncucampaign.own_time import CLOCK, PLANNING, START_UP, since_process_start
from ncucampaign.plan.expand import Plan
from ncucampaign.results.findings.weights import gpu_time_line
from ncucampaign.results.limit import limit_line
from ncucampaign.results.reading.records import NcuReportReader
from ncucampaign.results.sharing import sharing_breakdown
from ncucampaign.spec.loader import LoadedCampaign
from ncucampaign.spec.ncu_catalog import report_suffix


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("run", help="run the campaign; reports and manifest go to a run directory")
    add_run_arguments(parser)
    run_slurm.add_arguments(parser)
    run_k8s.add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    file_from_only(args)
    return run_request(RunRequest.from_args(args))


def run_request(request: RunRequest) -> int:
    """`run` as asked (from the command line, or by `ab`)."""
    CLOCK.reset()
    CLOCK.add(START_UP, since_process_start() or 0.0)
    with CLOCK.phase(PLANNING):  # what the stages below do not count as theirs (own_time)
        return _run(request)


def _run(request: RunRequest) -> int:
    resume_dir = Path(request.resume) if request.resume not in (None, "latest") else None
    if request.file is None and resume_dir is None:
        raise UsageError("run needs a campaign FILE (or --resume RUN_DIR)")
    run_k8s.check(request)  # first: --k8s with --slurm is a choice to make before either's tools are looked for
    run_slurm.check(request)
    loaded, plan = campaign_and_plan(request, resume_dir)
    section = run_k8s.k8s_settings(request.k8s_flags, loaded) if request.k8s else None
    root = run_k8s.k8s_runs_root(runs_root(request.out, loaded), section)
    if request.dry_run:
        return dry_run(plan, root / plan.campaign / "<run-id>" / "reports", report_suffix(installed_listing(plan.ncu)))
    check_jobs_per_gpu(request)
    gpus = gpu_list(request.gpus)
    remote_ncu = section is not None and shutil.which(plan.ncu) is None
    ncu_path, installed = local_ncu(plan, remote_ncu)
    print_warnings(loaded, plan, installed, sys.stderr)
    if request.resume == "latest":
        resume_dir = latest_begun(root, plan.campaign)
    if resume_dir is not None:
        before_resume(resume_dir)
        request, planned_anew = keep_own_flags(request, resume_dir)
        if planned_anew:  # its own --samples: the targets it planned
            loaded, plan = campaign_and_plan(request, resume_dir)
        if not request.only:
            plan = same_selection(plan, resume_dir)
    settings = RunSettings(
        runs_root=root,
        ncu_path=ncu_path,
        reader=NcuReportReader(ncu_path),
        show_output=request.show_output,
        command_line=tuple(sys.argv),
        gpus=gpus,
        jobs_per_gpu=request.jobs_per_gpu,
        resume=resume_dir,
        rerun_failed=request.rerun_failed,
        share=not request.no_share,
        installed=installed,
        weigh=request.weigh or loaded.campaign.weigh,
        remote_ncu=remote_ncu,
    )
    # To the backend: here, a Slurm array or a Kubernetes Job. Each opens its run through
    # execute/open_run, whose preflight checks the machine for all of them.
    return BACKENDS[request.backend](request, loaded, plan, settings)


def execute(_request: RunRequest, loaded: LoadedCampaign, plan: Plan, settings: RunSettings) -> int:
    """Run with the progress display, Ctrl-C handling and the final table."""
    stop = StopRequest()
    console = out_console()
    unfinished = None if settings.resume else unfinished_note(latest_run(settings.runs_root.absolute(), plan.campaign))
    if unfinished:
        print(f"ncucampaign: warning: {printable(unfinished)}", file=sys.stderr)
    reporter = ConsoleReporter(console, live=False if settings.show_output else None)
    with stop_on_signals(stop, reporter.stopping):  # a late Ctrl-C only sets a flag, also while printing
        local = start_run(loaded, plan, settings, reporter, stop)
        for note in local.opened.notes:  # before the progress display takes the terminal
            print(f"ncucampaign: note: {printable(note)}", file=sys.stderr)
        with reporter:
            try:
                retire_rerun_claims(local.opened)
            except BaseException:
                local.opened.close()
                raise
            result = local.execute()
        console.print(final_table(result.manifest, str(result.run.root)))
        lines = [*sharing_breakdown(result.manifest), limit_line(result.manifest), gpu_time_line(result.manifest)]
        for line in [*lines, *samples_short(plan, result.manifest)]:
            if line:
                console.print(line, highlight=False, markup=False)
        console.print(f"manifest: {result.run.manifest}", highlight=False)
    # A Ctrl-C that came as the run ended (while its table printed) was still a Ctrl-C: 130.
    return EXIT_INTERRUPTED if stop.by_signal else result.exit_code


Backend = Callable[[RunRequest, LoadedCampaign, Plan, RunSettings], int]
BACKENDS: dict[str, Backend] = {HERE: execute, SLURM.name: run_slurm.submit, KUBERNETES.name: run_k8s.submit}
