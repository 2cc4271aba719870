"""Before a run directory is written: the run's settings, the ncu to use, what can be checked up
front, the manifest a new run starts with and the one a resumed run continues from."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ncucampaign import __version__
from ncucampaign.errors import EnvironmentProblem, UsageError
from ncucampaign.execute.attempt.context import ReportReader
from ncucampaign.execute.doctor import before_run, run_checks
from ncucampaign.execute.process.provenance import git_info, gpu_info, host_info, ncu_info
from ncucampaign.execute.process.short import answered, probing_pool
from ncucampaign.execute.rundir.book import now_iso
from ncucampaign.execute.rundir.cache_files import stamp_of
from ncucampaign.execute.rundir.manifest import (
    CampaignInfo,
    GitInfo,
    GpuInfo,
    Manifest,
    NcuInfo,
    TargetRecord,
    ToolInfo,
)
from ncucampaign.execute.rundir.reading import RunFileDamaged, read_manifest
from ncucampaign.execute.rundir.request import RunRequest
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.gpus import outside_gpus
from ncucampaign.spec.loader import LoadedCampaign
from ncucampaign.spec.ncu_catalog import InstalledNcu


@dataclass(frozen=True)
class RunSettings:
    """How to run: the request as asked (its flags read from it, never copied), and what was settled from it and
    the campaign; the same for a local run and a batch task."""

    runs_root: Path
    ncu_path: str
    reader: ReportReader
    request: RunRequest = field(default_factory=RunRequest)  # recorded in the manifest (a resume reads it back)
    command_line: tuple[str, ...] = ()
    gpus: tuple[str, ...] | None = None  # run --gpus, resolved: one lane per GPU
    resume: Path | None = None
    resumed: Manifest | None = None  # the resumed run's manifest, as read before its lock was taken
    resumed_stamp: list[int] | None = None  # of the file it was read from: read again if it changed since
    share: bool = True  # run --no-share: every target in its own application run
    installed: InstalledNcu | None = None  # what the ncu lists: a target asking for more never shares
    weigh: bool = False  # weigh: true / run --weigh: a timing pass gives each target its share of GPU time
    remote_ncu: bool = False  # run --k8s from a machine without ncu: the pods' image has it (found there)
    # Invocations validate refuses (lint errors the installed ncu is sure to refuse), with why: closed unstarted,
    # never in a trace or a shared run (one such target sent 40 others to runs of their own).
    refused: Mapping[str, str] = field(default_factory=dict)


def resolve_ncu(ncu: str) -> str:
    found = shutil.which(ncu)
    if not found:
        raise EnvironmentProblem(
            f"ncu not found: {ncu!r} is not an executable on PATH. Install Nsight Compute, "
            "or name it with --ncu PATH, NCUCAMPAIGN_NCU or the campaign's 'ncu:' key."
        )
    return str(Path(found).absolute())


def preflight(plan: Plan, settings: RunSettings) -> list[str]:
    """Everything that can be checked before a run directory exists, for every backend (the
    machine's checks were met on the local path only): the GPUs asked for, each target's working
    directory, ncu, and doctor's run checks (execute/doctor.before_run: a failure every target would
    meet stops the run with exit 3). The notes to print: warnings, and failures that may not matter."""
    if settings.gpus:
        problem = outside_gpus(plan.invocations, settings.gpus)
        if problem:
            raise UsageError(problem)
    for inv in plan.invocations:
        if not inv.cwd.is_dir():
            raise UsageError(f"application.cwd: {inv.cwd} is not a folder; the application cannot start there")
    if not settings.remote_ncu and not os.access(settings.ncu_path, os.X_OK):
        raise EnvironmentProblem(f"{settings.ncu_path} is not executable")
    if os.environ.get("NCUCAMPAIGN_DOCTOR") == "off":
        return []
    return before_run(run_checks(settings.runs_root))


def resumable_manifest(store: RunStore, plan: Plan, settings: RunSettings) -> Manifest:
    """The manifest to resume from (under the run's lock), checked before anything in the run directory
    is rewritten: the one read before the lock was taken, unless the file changed since."""
    try:
        old = settings.resumed if settings.resumed is not None and _unchanged(store, settings) else None
        if old is None:
            old = read_manifest(store.run.root)
    except RunFileDamaged as exc:
        raise UsageError(f"{store.run.manifest}: cannot resume from it: {exc.why}") from None
    if old.campaign.name != plan.campaign:
        raise UsageError(
            f"{store.run.root} holds campaign {old.campaign.name!r}, not {plan.campaign!r}: resume it with "
            "its own campaign file"
        )
    return old


@dataclass(frozen=True)
class Provenance:
    """What ncu, nvidia-smi and git say, asked before a fresh run's directory is made: a kill while
    they answer leaves nothing behind, and once the directory exists its manifest follows at once
    (a kill -9 then left a run directory with no manifest, which --resume could not finish)."""

    ncu: NcuInfo
    gpus: list[GpuInfo] | None
    git: GitInfo | None


def provenance(plan: Plan, loaded: LoadedCampaign, settings: RunSettings) -> Provenance:
    cwd = plan.invocations[0].cwd if plan.invocations else loaded.base_dir
    with probing_pool(3) as pool:  # each asks another program; together they cost the slowest
        asked_ncu, asked_gpus = pool.submit(ncu_info, settings.ncu_path), pool.submit(gpu_info)
        asked_git = pool.submit(git_info, cwd)
        return Provenance(answered(asked_ncu), answered(asked_gpus), answered(asked_git))


def _unchanged(store: RunStore, settings: RunSettings) -> bool:
    return settings.resumed_stamp == stamp_of(store.run.manifest)


def new_manifest(
    store: RunStore,
    settings: RunSettings,
    targets: list[TargetRecord],
    info: CampaignInfo,
    found: Provenance,
) -> Manifest:
    """A fresh run's manifest, with the provenance of the machine, ncu and the workload."""
    ncu, gpus, git = found.ncu, found.gpus, found.git
    return Manifest(
        tool=ToolInfo(version=__version__),
        run_id=store.run.run_id,
        state="running",
        started_at=now_iso(),
        command_line=["ncucampaign", *settings.command_line[1:]],
        campaign=info,
        host=host_info(),
        ncu=ncu,
        gpus=gpus,
        workload_git=git,
        targets=targets,
        request=settings.request,
    )


def earlier_manifest(latest: Path) -> Manifest | None:
    """The manifest of the campaign's latest run (None when there is none, or it cannot be read: a new run does
    not need it)."""
    try:
        return read_manifest(latest.resolve(strict=True))
    except (OSError, RuntimeError, UsageError):  # RuntimeError: a loop of links
        return None


def previous_seconds(manifest: Manifest | None) -> dict[str, float]:
    """Seconds each target took when it ran alone in the campaign's latest run."""
    return {
        t.name: t.seconds
        for t in (manifest.targets if manifest is not None else ())
        if t.status == Status.OK and t.seconds > 0 and (t.obtained is None or t.obtained.how != "shared")
    }
