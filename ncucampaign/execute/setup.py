"""Before a run directory is written: the ncu to use, what can be checked up front, and the manifest
a resumed run continues from."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from ncucampaign.errors import EnvironmentProblem, UsageError, first_line
from ncucampaign.execute.manifest import Manifest
from ncucampaign.execute.store import RunStore
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.gpus import outside_gpus

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
