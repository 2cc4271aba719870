"""What `run --resume` keeps of the run it finishes: the campaign as that run used it (its own copy),
the flags it was started with, and the targets it recorded."""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path

from ncucampaign.commands.common import load_plan
from ncucampaign.commands.run_request import RunRequest
from ncucampaign.errors import EnvironmentProblem, UsageError
from ncucampaign.execute.rundir.store import latest_run, open_regular
from ncucampaign.plan.expand import Plan
from ncucampaign.results.reading.runs import load_run
from ncucampaign.spec.loader import LoadedCampaign
from ncucampaign.spec.yaml_lines import MAX_FILE_BYTES


def keep_own_flags(request: RunRequest, run_dir: Path) -> tuple[RunRequest, bool]:
    """A resumed run keeps the flags it was started with (--no-share, --samples, --weigh; issue 33: a
    resume of a --no-share run shared again), read from its manifest's command line as run reads
    them; flags given now add to them. With True when --samples came from the run (the plan changes)."""
    recorded = load_run(run_dir).manifest.command_line
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    parser.add_argument("--no-share", action="store_true")
    parser.add_argument("--weigh", action="store_true")
    parser.add_argument("--samples", type=int)
    try:
        own, _ = parser.parse_known_args(recorded[1:])
    except (argparse.ArgumentError, SystemExit):  # a command line this version does not read: nothing kept
        return request, False
    request = request.but(no_share=request.no_share or own.no_share, weigh=request.weigh or own.weigh)
    if request.samples is None and own.samples is not None:
        return request.but(samples=own.samples), True
    return request, False


NAME_IT = "name the campaign FILE to resume with"


def campaign_and_plan(request: RunRequest, resume_dir: Path | None) -> tuple[LoadedCampaign, Plan]:
    """The FILE named, or (for --resume RUN_DIR alone) the campaign as the run used it."""
    only = list(request.only) or None
    if request.file is not None or resume_dir is None:
        assert request.file is not None  # run() refuses a request with neither
        return load_plan(request.file, request.ncu, only, samples=request.samples)
    source, text = resumed_campaign(resume_dir)
    return load_plan(source, request.ncu, only, text=text, samples=request.samples)


def resumed_campaign(run_dir: Path) -> tuple[str, str]:
    """`--resume RUN_DIR` without a FILE: the campaign as that run used it, from the run directory's
    own copy (a regular file whose sha256 the manifest records: nothing else is read, so no other
    file's content can reach an error message), with relative paths from where the original was."""
    loaded_run = load_run(run_dir)
    info = loaded_run.manifest.campaign
    copy = loaded_run.root / "campaign.yaml"
    if not info.source or not Path(info.source).parent.is_dir():
        raise UsageError(f"{run_dir}: the folder of its campaign file {info.source!r} is gone; {NAME_IT}")
    try:
        fd = open_regular(copy, os.O_RDONLY)
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except (OSError, EnvironmentProblem) as exc:
        raise UsageError(f"{copy}: cannot read the run's copy of its campaign ({exc}); {NAME_IT}") from None
    if info.sha256 and hashlib.sha256(raw).hexdigest() != info.sha256:
        raise UsageError(f"{copy} is not the campaign this run recorded (its sha256 differs); {NAME_IT}")
    return info.source, raw.decode("utf-8", errors="replace")


def same_selection(plan: Plan, run_dir: Path) -> Plan:
    """A resume finishes the run that was started: the targets it recorded (a run made with --only
    stays that selection), unless --only names others."""
    recorded = {record.name for record in load_run(run_dir).manifest.targets}
    kept = [name for name in plan.names() if name in recorded]
    return plan.select(kept) if kept else plan


def latest_begun(root: Path, campaign: str) -> Path:
    """The campaign's latest run, for `--resume` without a RUN_DIR. A run is `latest` once its manifest
    is written, before any ncu process starts: without one, nothing began that a resume could finish."""
    found = latest_run(root, campaign)
    if not os.path.lexists(found):
        raise UsageError(
            f"--resume: no run of {campaign} under {root} began (no {found.name}); run it without --resume"
        )
    return found
