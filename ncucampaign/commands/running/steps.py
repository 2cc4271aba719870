"""The steps of `run` around the pipeline (commands/run.py): which ncu, which GPUs, the lines a run
ends with, and --dry-run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ncucampaign.commands.parts.common import checked_ncu
from ncucampaign.errors import EXIT_OK, UsageError, plural, printable
from ncucampaign.execute.prepare import resolve_ncu
from ncucampaign.execute.process.provenance import usable_gpus
from ncucampaign.execute.rundir.manifest import Manifest
from ncucampaign.execute.rundir.request import RunRequest
from ncucampaign.plan.argv import ncu_argv, shell_command
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.gpus import parse_gpus
from ncucampaign.results.gate.samples import short_samples
from ncucampaign.spec.ncu_catalog import InstalledNcu


def local_ncu(plan: Plan, remote: bool) -> tuple[str, InstalledNcu | None]:
    """ncu here, and what it says of itself. With --k8s ncu may live only in the pods' image: the submitting machine (a
    laptop, a CI runner) then names it as the campaign does, and each pod finds it and checks its options (k8s-task)."""
    if remote:
        print(
            f"ncucampaign: note: {plan.ncu!r} is not on this machine; the pods run the image's (not checked here)",
            file=sys.stderr,
        )
        return plan.ncu, None
    ncu_path = resolve_ncu(plan.ncu)
    return ncu_path, checked_ncu(ncu_path, plan)


def check_jobs_per_gpu(request: RunRequest) -> None:
    if request.jobs_per_gpu < 1:
        raise UsageError("--jobs-per-gpu must be at least 1")
    if request.jobs_per_gpu > 1 and not request.gpus:
        raise UsageError("--jobs-per-gpu needs --gpus")
    if request.jobs_per_gpu > 1:
        print(
            f"ncucampaign: warning: {request.jobs_per_gpu} ncu processes per GPU; profiling at the same time on one "
            "GPU was seen to raise durations by a few percent",
            file=sys.stderr,
        )


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
