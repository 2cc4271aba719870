"""Resuming a run in place: which invocations still have to run, the manifest the resumed run starts
from, and the processes a crashed runner left behind. Pure apart from the cleanup."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType

from ncucampaign.execute.process.groups import kill_orphaned_group, marked_groups
from ncucampaign.execute.rundir.cache_files import sha256_of
from ncucampaign.execute.rundir.lock import LOCK_FILE, last_words, lock_held
from ncucampaign.execute.rundir.manifest import CampaignInfo, Manifest, ReportInfo, TargetRecord
from ncucampaign.execute.rundir.request import RunRequest
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.trace.tracers import remove_work_folders
from ncucampaign.plan.expand import Invocation
from ncucampaign.spec.ncu_versions import REPORT_SUFFIXES


class Decision(StrEnum):
    RUN = "run"
    SKIP = "skip"  # done before and unchanged, or not asked for


def resume_decision(record: TargetRecord | None, new_fingerprint: str, rerun_failed: bool) -> Decision:
    if record is None:
        return Decision.SKIP if rerun_failed else Decision.RUN  # --rerun-failed runs failures only
    if record.status == Status.OK and (rerun_failed or record.fingerprint == new_fingerprint):
        return Decision.SKIP
    if rerun_failed and record.status == Status.PENDING:
        return Decision.SKIP
    return Decision.RUN


def kept_report_problems(root: Path, records: Iterable[TargetRecord]) -> dict[str, str]:
    """Why the report of each ok record is not the one it recorded (missing, another size or digest, not a
    regular file of the run directory), by target; a resume runs those again. Each file is hashed once (a union's
    report is read out for hundreds of targets), several at once: hashing is most of what a resume reads."""
    named = {r.name: r.report for r in records if r.status == Status.OK and r.report is not None}
    shared: dict[str, ReportInfo] = {info.path: info for info in named.values()}

    def problem(info: ReportInfo) -> str | None:
        path = root.joinpath(*Path(info.path).parts)
        try:
            if path.is_symlink() or not path.is_file():
                return f"{info.path} is missing (or not a regular file)"
            size = path.stat().st_size
            if size != info.bytes:
                return f"{info.path} is {size} bytes, {info.bytes} when recorded"
            return None if sha256_of(path) == info.sha256 else f"{info.path} is not the report recorded (sha256)"
        except OSError as exc:
            return f"{info.path} cannot be read: {exc.strerror or exc}"

    with ThreadPoolExecutor(max(1, min(8, os.cpu_count() or 1))) as pool:
        found = dict(zip(shared, pool.map(problem, shared.values()), strict=True))
    return {name: why for name, info in named.items() if (why := found[info.path]) is not None}


def resumed_manifest(
    old: Manifest,
    invocations: Sequence[Invocation],
    fresh: dict[str, TargetRecord],
    info: CampaignInfo,
    rerun_failed: bool,
    now: str,
    request: RunRequest | None = None,
    damaged: Mapping[str, str] = MappingProxyType({}),
) -> tuple[Manifest, list[Invocation]]:
    """The manifest a resumed run continues (the request it began with kept, this resume's recorded beside it), and
    the invocations it runs. `damaged`: ok targets whose kept report is not the one recorded (kept_report_problems),
    run again, or, no longer planned, interrupted with the reason."""
    previous = {record.name: record for record in old.targets}
    for name, why in damaged.items():
        if name in previous:
            previous[name] = previous[name].model_copy(
                update={"status": Status.INTERRUPTED, "message": f"its kept report was not what it recorded: {why}"}
            )
    records, to_run = [], []
    for inv in invocations:
        new, before = fresh[inv.name], previous.pop(inv.name, None)
        if resume_decision(before, new.fingerprint, rerun_failed) == Decision.SKIP:
            records.append(before if before is not None else new)  # a new target stays pending
            continue
        if before is not None:  # keep its history: attempts (and their reports) of earlier runs
            new.attempts, new.diagnosis = before.attempts, before.diagnosis
        records.append(new)
        to_run.append(inv)
    manifest = old.model_copy(
        update={
            "state": "running",
            "ended_at": None,
            "campaign": info,
            "targets": records + list(previous.values()),  # targets no longer planned stay recorded
            "resumed": [*old.resumed, now],
            "request": old.request if old.request is not None else request,
            "resumed_with": [*old.resumed_with, *([request] if request is not None else [])],
        }
    )
    return manifest, to_run


def clean_up_after_a_crash(old: Manifest, run_root: str, now: str) -> None:
    """A runner killed mid-attempt leaves ncu (in its own process group) running: stop it, and mark
    what was in flight as interrupted."""
    for record in [*old.targets, *old.shared_runs]:
        for attempt in record.attempts:
            if attempt.ended_at is not None:
                continue
            killed = kill_orphaned_group(attempt.process_group, run_root) if attempt.process_group else 0
            attempt.ended_at = now
            attempt.status = Status.INTERRUPTED
            attempt.message = "the runner stopped during this attempt" + (
                f"; {killed} process(es) it left were killed on resume" if killed else ""
            )
            attempt.report = attempt.report or _left_report(Path(run_root), record.name)
        if record.status == Status.RUNNING:
            record.status = Status.INTERRUPTED
            record.message = "the runner stopped during this target"
    # What no attempt recorded: `ncu --import` listings and splits of shared runs carry the run's
    # marker too (execute/trace/ncu_import.py); with the run locked, any process that has it is left over.
    for group in marked_groups(run_root):
        kill_orphaned_group(group, run_root)


def _left_report(run_root: Path, name: str) -> str | None:
    """The report an attempt the runner died in left (whole or not), kept with the attempt: a shared run's is named
    by no later record (a killed union's report lay in reports/shared/ unaccounted for)."""
    for suffix in REPORT_SUFFIXES:
        path = run_root / "reports" / f"{name}{suffix}"
        if path.is_file() and not path.is_symlink():
            return str(path.relative_to(run_root))
    return None


def sweep_work_folders(latest: Path, manifest: Manifest | None) -> None:
    """A new run removes what a killed runner's takes left in the campaign's latest run (as its resume would),
    when nothing runs it: no runner holds its lock, and no batch system was handed its units."""
    try:
        root = latest.resolve(strict=True)
    except (OSError, RuntimeError):
        return
    if manifest is not None and not manifest.submissions and not lock_held(root):
        remove_work_folders(root / "reports")


# What a run directory holds before its first manifest is written (execute/open_run.py): a runner killed then left
# only these, and nothing ran in it.
_BEFORE_THE_MANIFEST = frozenset({"campaign.yaml", "plan.json", LOCK_FILE, "reports", "logs"})


def never_begun(root: Path) -> bool:
    """Whether `root` is a run directory a runner was killed in before it wrote a manifest (nothing ran there):
    only what open_run writes first, empty folders, and temporary files; no runner holding it."""
    try:
        if root.is_symlink() or not root.is_dir() or (root / "manifest.json").exists():
            return False
        entries = list(root.iterdir())
        if not any(entry.name == "plan.json" for entry in entries) or lock_held(root):
            return False
        for entry in entries:
            if entry.name.endswith(".tmp") and entry.name.startswith(".") and entry.is_file():
                continue
            if entry.name not in _BEFORE_THE_MANIFEST or entry.is_symlink():
                return False
            if entry.is_dir() and any(part.is_file() or part.is_symlink() for part in entry.rglob("*")):
                return False
        return True
    except OSError:
        return False


def sweep_never_begun(campaign_runs: Path) -> list[Path]:
    """Remove the campaign's run directories that never began (never_begun), as a new run starts: resume cannot
    finish them (they have no manifest) and nothing else would remove them. The ones removed."""
    removed = []
    with contextlib.suppress(OSError):
        for root in sorted(campaign_runs.iterdir()):
            if never_begun(root):
                shutil.rmtree(root, ignore_errors=True)
                removed.append(root)
    return removed


def unfinished_note(latest: Path, manifest: Manifest | None) -> str | None:
    """What to say at the start of a new run when the campaign's latest run (`manifest`) did not end (it says
    `running` and no runner holds it): how it ended, where its runner could note that (a full disk leaves no
    manifest to say it), and how to finish it. None when there is nothing to say."""
    if manifest is None or manifest.state not in ("running", "interrupted"):
        return None
    try:
        root = latest.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if manifest.state == "interrupted":
        return f"the last run {root} was interrupted; {resume_command(root)} finishes it"
    words = last_words(root)
    if words is None and lock_held(root):
        return None  # it is still going
    how = f"it ended {words}" if words else "its runner was killed or lost its disk before it could say so"
    return f"the last run {root} did not finish ({how}); {resume_command(root)} finishes it"


def resume_command(root: Path) -> str:
    return f"`ncucampaign run --resume {shlex.quote(str(root))}`"
