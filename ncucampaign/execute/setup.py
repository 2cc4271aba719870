"""Before a run directory is written: the ncu to use, what can be checked up front, and the manifest
a resumed run continues from."""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from ncucampaign import __version__
from ncucampaign.errors import EnvironmentProblem, UsageError, first_line
from ncucampaign.execute.attempts import now_iso
from ncucampaign.execute.manifest import CampaignInfo, Manifest, TargetRecord, ToolInfo
from ncucampaign.execute.provenance import git_info, gpu_info, host_info, ncu_info
from ncucampaign.execute.store import RunStore
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.gpus import outside_gpus
from ncucampaign.spec.loader import LoadedCampaign

if TYPE_CHECKING:
    from ncucampaign.execute.runner import RunSettings


def resolve_ncu(ncu: str) -> str:
    found = shutil.which(ncu)
    if not found:
        raise EnvironmentProblem(
            f"ncu not found: {ncu!r} is not an executable on PATH. Install Nsight Compute, "
            "or name it with --ncu PATH, NCUCAMPAIGN_NCU or the campaign's 'ncu:' key."
        )
    return str(Path(found).absolute())


def preflight(plan: Plan, settings: RunSettings) -> None:
    """Everything that can be checked before a run directory exists."""
    if settings.gpus:
        problem = outside_gpus(plan.invocations, settings.gpus)
        if problem:
            raise UsageError(problem)
    for inv in plan.invocations:
        if not inv.cwd.is_dir():
            raise UsageError(f"target {inv.name}: its working directory {inv.cwd} is not a directory")
    if not os.access(settings.ncu_path, os.X_OK):
        raise EnvironmentProblem(f"{settings.ncu_path} is not executable")


def resumable_manifest(store: RunStore, plan: Plan) -> Manifest:
    """The manifest to resume from, checked before anything in the run directory is rewritten."""
    try:
        old = Manifest.model_validate(json.loads(store.run.manifest.read_bytes()))
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: JSON, UTF-8, validation, huge integers
        raise UsageError(f"{store.run.manifest}: cannot resume from it: {first_line(exc)}") from None
    if old.campaign.name != plan.campaign:
        raise UsageError(
            f"{store.run.root} holds campaign {old.campaign.name!r}, not {plan.campaign!r}: resume it with "
            "its own campaign file"
        )
    return old


def new_manifest(
    store: RunStore,
    plan: Plan,
    loaded: LoadedCampaign,
    settings: RunSettings,
    targets: list[TargetRecord],
    info: CampaignInfo,
) -> Manifest:
    """A fresh run's manifest, with the provenance of the machine, ncu and the workload."""
    cwd = plan.invocations[0].cwd if plan.invocations else loaded.base_dir
    with ThreadPoolExecutor(3) as pool:  # each asks another program; together they cost the slowest
        ncu = pool.submit(ncu_info, settings.ncu_path)
        gpus, git = pool.submit(gpu_info), pool.submit(git_info, cwd)
    return Manifest(
        tool=ToolInfo(version=__version__),
        run_id=store.run.run_id,
        state="running",
        started_at=now_iso(),
        command_line=["ncucampaign", *settings.command_line[1:]],
        campaign=info,
        host=host_info(),
        ncu=ncu.result(),
        gpus=gpus.result(),
        workload_git=git.result(),
        targets=targets,
    )
