"""What `run --resume` keeps of the run it finishes, read once from its manifest (Resumed): the campaign
as that run used it (its own copy), the request it was started with (the manifest's `request`, as the
run recorded it: nothing parses its command line again), and the targets it recorded."""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ncucampaign.commands.parts.common import load_plan
from ncucampaign.commands.running.request import ncu_of
from ncucampaign.errors import EnvironmentProblem, UsageError, printable
from ncucampaign.execute.rundir.cache_files import stamp_of
from ncucampaign.execute.rundir.manifest import Manifest
from ncucampaign.execute.rundir.request import RunRequest
from ncucampaign.execute.rundir.seal import seal_holds
from ncucampaign.execute.rundir.store import MANIFEST, latest_run, open_regular
from ncucampaign.plan.expand import Plan
from ncucampaign.results.reading.runs import load_run
from ncucampaign.spec.loader import LoadedCampaign
from ncucampaign.spec.ncu_catalog import InstalledNcu
from ncucampaign.spec.yaml_lines import MAX_FILE_BYTES

NAME_IT = "name the campaign FILE to resume with"


@dataclass(frozen=True)
class Resumed:
    """A run directory being resumed and its manifest, read once; `stamp`: of the file it was read
    from (whoever holds the run's lock later reads it again only when the file changed since)."""

    root: Path
    manifest: Manifest
    stamp: list[int] | None

    def keep(self, request: RunRequest, loaded: LoadedCampaign, plan: Plan) -> tuple[RunRequest, LoadedCampaign, Plan]:
        """The request with what the run was started with (--no-share, --weigh, --samples), and the plan of the targets
        it recorded (a run made with --only stays that selection), unless --only names others."""
        recorded = self.manifest.request
        if recorded is None:
            print(
                f"ncucampaign: note: {printable(str(self.root))} was recorded by an older ncucampaign: the flags it "
                "was started with (--no-share, --weigh, --samples) are not known here; give them again if it had any",
                file=sys.stderr,
            )
        kept = request.kept_by(recorded) if recorded is not None else request
        if kept.samples != request.samples:  # its own --samples: the targets it planned
            loaded, plan = campaign_and_plan(kept, self)
        if not kept.only:
            names = {record.name for record in self.manifest.targets}
            selected = [name for name in plan.names() if name in names]
            plan = plan.select(selected) if selected else plan
        made = self.manifest.ncu.path  # named, never run: a run directory names no program (docs/running.md)
        if ncu_of(request) is None and made and made != plan.ncu:
            print(
                f"ncucampaign: note: this run was made with {printable(made)}; resuming with this machine's "
                f"{printable(plan.ncu)}, if it is of the same version ({self.manifest.ncu.version or 'unknown'})",
                file=sys.stderr,
            )
        return kept, loaded, plan

    def same_ncu(self, ncu_path: str, installed: InstalledNcu | None) -> None:
        """One run's results come from one ncu: a resume by another version would re-run what it changes, name its
        reports otherwise (.ncu-repz) and record results of two versions under one."""
        made = self.manifest.ncu
        if installed is None or made.version is None or installed.version == made.version:
            return
        raise UsageError(
            f"--resume {self.root}: the run was made with ncu {made.version} ({made.path}); {ncu_path} is "
            f"{installed.version}. Resume with the run's own ncu, or start a new run"
        )


def resumed_run(resume: str | None) -> Resumed | None:
    """The run `--resume RUN_DIR` names, read once (None: no resume, or `latest`, found later)."""
    if resume is None or resume == "latest":
        return None
    loaded = load_run(resume)
    try:
        stamp: list[int] | None = stamp_of(loaded.root.resolve() / MANIFEST)
    except OSError:
        stamp = None  # read again under the run's lock
    return Resumed(loaded.root.resolve(), loaded.manifest, stamp)


def campaign_and_plan(request: RunRequest, resumed: Resumed | None) -> tuple[LoadedCampaign, Plan]:
    """The FILE named, or (for --resume RUN_DIR alone) the campaign as the run used it."""
    only = list(request.only) or None
    if request.file is not None or resumed is None:
        assert request.file is not None  # run() refuses a request with neither
        return load_plan(request.file, ncu_of(request), only, samples=request.samples)
    source, text = resumed_campaign(resumed)
    return load_plan(source, ncu_of(request), only, text=text, samples=request.samples)


def resumed_campaign(resumed: Resumed) -> tuple[str, str]:
    """`--resume RUN_DIR` without a FILE: the campaign as that run used it, from the run directory's
    own copy (a regular file whose sha256 the manifest records: nothing else is read, so no other
    file's content can reach an error message), with relative paths from where the original was."""
    info = resumed.manifest.campaign
    copy = resumed.root / "campaign.yaml"
    if not info.source or not Path(info.source).parent.is_dir():
        raise UsageError(f"{resumed.root}: the folder of its campaign file {info.source!r} is gone; {NAME_IT}")
    try:
        fd = open_regular(copy, os.O_RDONLY)
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except (OSError, EnvironmentProblem) as exc:
        raise UsageError(f"{copy}: cannot read the run's copy of its campaign ({exc}); {NAME_IT}") from None
    if not seal_holds(info.seal, info.source, info.sha256):  # a source or digest another wrote, or moved
        raise UsageError(
            f"{resumed.root}: its manifest's campaign record is not sealed by you (made by another user or machine, "
            f"by an ncucampaign before keyed seals, or edited since), so its copy is not run; {NAME_IT}"
        )
    if hashlib.sha256(raw).hexdigest() != info.sha256:
        raise UsageError(f"{copy} is not the campaign this run recorded (its sha256 differs); {NAME_IT}")
    return info.source, raw.decode("utf-8", errors="replace")


def latest_begun(root: Path, campaign: str) -> Path:
    """The campaign's latest run, for `--resume` without a RUN_DIR. A run is `latest` once its manifest
    is written, before any ncu process starts: without one, nothing began that a resume could finish."""
    found = latest_run(root, campaign)
    if not os.path.lexists(found):
        raise UsageError(
            f"--resume: no run of {campaign} under {root} began (no {found.name}); run it without --resume"
        )
    return found
