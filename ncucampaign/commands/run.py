"""`ncucampaign run FILE`: run the campaign into a run directory (or `--resume` one)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from ncucampaign.commands import run_k8s, run_slurm
from ncucampaign.commands.common import (
    add_ncu_option,
    checked_ncu,
    file_from_only,
    installed_listing,
    out_console,
    print_warnings,
    runs_root,
)
from ncucampaign.commands.progress import ConsoleReporter, final_table
from ncucampaign.commands.run_resume import campaign_and_plan, keep_own_flags, latest_begun, same_selection
from ncucampaign.errors import EXIT_INTERRUPTED, EXIT_OK, UsageError, plural, printable
from ncucampaign.execute.doctor import before_run, run_checks
from ncucampaign.execute.prepare import RunSettings, resolve_ncu
from ncucampaign.execute.process.signals import StopRequest, stop_on_signals
from ncucampaign.execute.provenance import usable_gpus
from ncucampaign.execute.resume import unfinished_note
from ncucampaign.execute.rundir.manifest import Manifest
from ncucampaign.execute.rundir.store import latest_run
from ncucampaign.execute.runner import start_run
from ncucampaign.own_time import CLOCK, PLANNING, START_UP, since_process_start
from ncucampaign.plan.argv import ncu_argv, shell_command
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.gpus import parse_gpus
from ncucampaign.results.findings.weights import gpu_time_line
from ncucampaign.results.gate.gate import short_samples
from ncucampaign.results.limit import limit_line
from ncucampaign.results.reading.records import NcuReportReader
from ncucampaign.results.sharing import sharing_breakdown
from ncucampaign.spec.kubernetes import KubernetesSection
from ncucampaign.spec.loader import LoadedCampaign
from ncucampaign.spec.ncu_catalog import InstalledNcu, report_suffix


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("run", help="run the campaign; reports and manifest go to a run directory")
    parser.add_argument("file", metavar="FILE", nargs="?", help="the campaign (with --resume: default, the one it ran)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these targets (or expanded names)")
    parser.add_argument(
        "--out", metavar="DIR", help="root of run directories (default: runs_dir: or runs/ beside the campaign file)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print what would run; create nothing")
    parser.add_argument(
        "--samples", type=int, metavar="N", help="samples per target for compare's verdicts, over the campaign's"
    )
    add_ncu_option(parser)
    parser.add_argument("--show-output", action="store_true", help="show ncu's and the application's output live")
    parser.add_argument(
        "--resume",
        nargs="?",
        const="latest",
        metavar="RUN_DIR",
        help="complete a run: skip targets that are ok and unchanged (default: the latest run)",
    )
    parser.add_argument(
        "--rerun-failed",
        action="store_true",
        help="with --resume (implied): run only the targets that failed or are incomplete",
    )
    parser.add_argument("--gpus", metavar="LIST", help="run targets side by side, one per GPU: 0,1,... or all")
    parser.add_argument(
        "--no-share",
        action="store_true",
        help="run every target in its own application run (default: targets with identical run settings share "
        "one, split and verified per target)",
    )
    parser.add_argument(
        "--weigh",
        action="store_true",
        help="after the targets, time every launch of the application once (as `weigh: true` does), so that "
        "findings rank by what they would gain the whole application",
    )
    parser.add_argument(
        "--jobs-per-gpu",
        type=int,
        default=1,
        metavar="N",
        help="ncu processes sharing one GPU (default 1: sharing can disturb the numbers)",
    )
    run_slurm.add_arguments(parser)
    run_k8s.add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    CLOCK.reset()
    CLOCK.add(START_UP, since_process_start() or 0.0)
    with CLOCK.phase(PLANNING):  # what the stages below do not count as theirs (own_time)
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    if args.rerun_failed and args.resume is None:
        args.resume = "latest"
    resume_dir = Path(args.resume) if args.resume not in (None, "latest") else None
    file_from_only(args)
    if args.file is None and resume_dir is None:
        raise UsageError("run needs a campaign FILE (or --resume RUN_DIR)")
    run_k8s.check(args)  # first: --k8s with --slurm is a choice to make before either's tools are looked for
    run_slurm.check(args)
    loaded, plan = campaign_and_plan(args, resume_dir)
    section = run_k8s.k8s_settings(args, loaded) if args.k8s else None
    root = run_k8s.k8s_runs_root(runs_root(args.out, loaded), section)
    if args.dry_run:
        return dry_run(plan, root / plan.campaign / "<run-id>" / "reports", report_suffix(installed_listing(plan.ncu)))
    check_jobs_per_gpu(args)
    gpus = gpu_list(args.gpus)
    remote_ncu = section is not None and shutil.which(plan.ncu) is None
    ncu_path, installed = local_ncu(plan, remote_ncu)
    print_warnings(loaded, plan, installed, sys.stderr)
    if args.resume == "latest":
        resume_dir = latest_begun(root, plan.campaign)
    if resume_dir is not None:
        run_slurm.before_resume(resume_dir)
        if keep_own_flags(args, resume_dir):  # its own --samples: the targets it planned
            loaded, plan = campaign_and_plan(args, resume_dir)
        if not args.only:
            plan = same_selection(plan, resume_dir)
    settings = RunSettings(
        runs_root=root,
        ncu_path=ncu_path,
        reader=NcuReportReader(ncu_path),
        show_output=args.show_output,
        command_line=tuple(sys.argv),
        gpus=gpus,
        jobs_per_gpu=args.jobs_per_gpu,
        resume=resume_dir,
        rerun_failed=args.rerun_failed,
        share=not args.no_share,
        installed=installed,
        weigh=args.weigh or loaded.campaign.weigh,
        remote_ncu=remote_ncu,
    )
    return dispatch(args, loaded, plan, settings, section)


def local_ncu(plan: Plan, remote: bool) -> tuple[str, InstalledNcu | None]:
    """ncu here, and what it says of itself. With --k8s ncu may live only in the pods' image: the
    submitting machine (a laptop, a CI runner) then names it as the campaign does, and each pod finds
    it and checks its options (k8s-task)."""
    if remote:
        print(
            f"ncucampaign: note: {plan.ncu!r} is not on this machine; the pods run the image's (not checked here)",
            file=sys.stderr,
        )
        return plan.ncu, None
    ncu_path = resolve_ncu(plan.ncu)
    return ncu_path, checked_ncu(ncu_path, plan)


def dispatch(
    args: argparse.Namespace,
    loaded: LoadedCampaign,
    plan: Plan,
    settings: RunSettings,
    section: KubernetesSection | None,
) -> int:
    """To the backend: a Slurm array, a Kubernetes Job, or here (after doctor's checks)."""
    if args.slurm:
        run_slurm.check_run_path(settings.resume or settings.runs_root.absolute() / plan.campaign)
        return run_slurm.submit(loaded, plan, settings, args)
    if section is not None:
        return run_k8s.submit(loaded, plan, settings, section, args.wait)
    machine_ready(settings.runs_root)
    return execute(loaded, plan, settings)


def machine_ready(root: Path) -> None:
    """doctor's run checks (issue 34; execute/doctor.before_run says what stops a run)."""
    if os.environ.get("NCUCAMPAIGN_DOCTOR") == "off":
        return
    for note in before_run(run_checks(root)):
        print(f"ncucampaign: note: {printable(note)}", file=sys.stderr)


def check_jobs_per_gpu(args: argparse.Namespace) -> None:
    if args.jobs_per_gpu < 1:
        raise UsageError("--jobs-per-gpu must be at least 1")
    if args.jobs_per_gpu > 1 and not args.gpus:
        raise UsageError("--jobs-per-gpu needs --gpus")
    if args.jobs_per_gpu > 1:
        print(
            f"ncucampaign: warning: {args.jobs_per_gpu} ncu processes per GPU; profiling at the same time on one "
            "GPU was seen to raise durations by a few percent",
            file=sys.stderr,
        )


def execute(loaded: LoadedCampaign, plan: Plan, settings: RunSettings) -> int:
    """Run with the progress display, Ctrl-C handling and the final table."""
    stop = StopRequest()
    console = out_console()
    unfinished = None if settings.resume else unfinished_note(latest_run(settings.runs_root.absolute(), plan.campaign))
    if unfinished:
        print(f"ncucampaign: warning: {printable(unfinished)}", file=sys.stderr)
    reporter = ConsoleReporter(console, live=False if settings.show_output else None)
    with stop_on_signals(stop, reporter.stopping):  # a late Ctrl-C only sets a flag, also while printing
        with reporter:
            local = start_run(loaded, plan, settings, reporter, stop)
            try:
                run_slurm.retire_rerun_claims(local.opened)
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


def samples_short(plan: Plan, manifest: Manifest) -> list[str]:
    """A line per target whose samples fell short of what it asked for (results/gate/gate.short_samples)."""
    records = {record.name: record for record in manifest.targets}
    found = (
        short_samples(records[inv.name], inv.options.samples or 1) for inv in plan.invocations if inv.name in records
    )
    return [f"samples: {printable(line)}" for line in found if line]


def dry_run(plan: Plan, report_dir: Path, suffix: str) -> int:
    print(f"# dry run: {plural(len(plan.invocations), 'ncu invocation')}; nothing is created")
    for inv in plan.invocations:
        print(shell_command(ncu_argv(inv, plan.ncu, report_dir, suffix), inv.env, inv.cwd))
    return EXIT_OK


def gpu_list(text: str | None) -> tuple[str, ...] | None:
    """--gpus, checked against the GPUs this process may use (when they can be known)."""
    if text is None:
        return None
    usable = usable_gpus(os.environ)
    try:
        gpus = parse_gpus(text, usable[0] if usable else None, usable[1] if usable else ())
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if usable is None:
        print(
            f"ncucampaign: warning: --gpus {text}: cannot check that these GPUs exist (no nvidia-smi and no "
            "CUDA_VISIBLE_DEVICES); taken as given",
            file=sys.stderr,
        )
    return gpus
