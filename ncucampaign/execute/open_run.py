"""Opening a run directory for a local run or a Slurm submission: check, create (or reopen) it, take
its lock, and write the campaign, the plan and the starting manifest. What runs next, and where, is
the backend's business (backends/local.py runs it here; backends/slurm/submit.py submits it)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from ncucampaign.execute.prepare import (
    Provenance,
    RunSettings,
    earlier_manifest,
    new_manifest,
    preflight,
    previous_seconds,
    provenance,
    resumable_manifest,
)
from ncucampaign.execute.resume import (
    clean_up_after_a_crash,
    kept_report_problems,
    resumed_manifest,
    sweep_never_begun,
    sweep_work_folders,
    unfinished_note,
)
from ncucampaign.execute.rundir.book import RecordBook, now_iso, pending_record
from ncucampaign.execute.rundir.journal import ManifestFiles
from ncucampaign.execute.rundir.manifest import CampaignInfo, Manifest
from ncucampaign.execute.rundir.seal import campaign_seal
from ncucampaign.execute.rundir.store import RunStore, latest_run
from ncucampaign.execute.trace.tracers import remove_work_folders
from ncucampaign.plan.argv import ncu_argv, plan_json
from ncucampaign.plan.expand import Invocation, Plan
from ncucampaign.spec.loader import LoadedCampaign
from ncucampaign.spec.ncu_catalog import report_suffix


@dataclass
class OpenRun:
    """A run directory, locked while this lives, with its manifest in `book`."""

    loaded: LoadedCampaign
    plan: Plan
    settings: RunSettings
    store: RunStore
    book: RecordBook
    to_run: list[Invocation]  # what is left to run (all of the plan, unless resumed)
    previous: dict[str, float]  # seconds each target took alone in the campaign's latest run
    held: contextlib.ExitStack
    notes: tuple[str, ...] = ()  # what the checks before it was opened had to say (prepare.preflight)
    latest_before: str | None = None  # where the campaign's `latest` pointed before (a new run moves it)
    warnings: tuple[str, ...] = ()  # what the campaign's latest run left undone (resume.unfinished_note)

    @property
    def manifest(self) -> Manifest:
        return self.book.manifest

    def close(self) -> None:
        """Let go of the run directory's journal and lock."""
        self.book.close()
        self.held.close()


def open_run(loaded: LoadedCampaign, plan: Plan, settings: RunSettings) -> OpenRun:
    """Check, then create (or reopen) the run directory, take its lock and write the starting manifest."""
    notes = preflight(plan, settings)
    latest = latest_run(settings.runs_root.absolute(), plan.campaign)
    before = os.readlink(latest) if not settings.resume and latest.is_symlink() else None
    earlier = earlier_manifest(latest) if not settings.resume else None  # a resume's is read under its lock
    unfinished = None
    if not settings.resume:
        sweep_work_folders(latest, earlier)
        sweep_never_begun(latest.parent)
        unfinished = unfinished_note(latest, earlier)
    found = None if settings.resume else provenance(plan, loaded, settings)  # before the directory is made
    suffix = report_suffix(settings.installed)
    store = (
        RunStore.open(settings.resume, suffix)
        if settings.resume
        else RunStore.create(settings.runs_root, plan.campaign, report_suffix=suffix)
    )
    held = contextlib.ExitStack()
    held.enter_context(store.lock())
    try:
        old = resumable_manifest(store, plan, settings) if settings.resume else None
        previous = previous_seconds(old if old is not None else earlier)
        store.check_contents()
        book, to_run, redone = _begin(store, loaded, plan, settings, old, found)
    except BaseException:
        held.close()
        raise
    warnings = ((unfinished,) if unfinished else ()) + redone
    return OpenRun(loaded, plan, settings, store, book, to_run, previous, held, tuple(notes), before, warnings)


def _begin(
    store: RunStore,
    loaded: LoadedCampaign,
    plan: Plan,
    settings: RunSettings,
    old: Manifest | None,
    found: Provenance | None,
) -> tuple[RecordBook, list[Invocation], tuple[str, ...]]:
    run = store.run
    damaged: dict[str, str] = {}
    if old is not None:
        clean_up_after_a_crash(old, str(run.root), now_iso())
        remove_work_folders(run.reports)  # what traces a killed runner took left
        damaged = kept_report_problems(run.root, old.targets)
    store.make_folders()
    argvs = {inv.name: ncu_argv(inv, settings.ncu_path, run.reports, run.report_suffix) for inv in plan.invocations}
    copy = store.write_text("campaign.yaml", loaded.text)
    store.write_json("plan.json", plan_json(plan, argvs))
    fresh = {inv.name: pending_record(inv, argvs[inv.name], run) for inv in plan.invocations}
    source = str(loaded.path.absolute()) if loaded.path.is_file() else None
    info = CampaignInfo(
        name=plan.campaign,
        source=source,
        copy_path=run.relative(copy),
        sha256=loaded.sha256,
        seal=campaign_seal(source, loaded.sha256),
    )
    if old is not None:
        manifest, to_run = resumed_manifest(
            old, plan.invocations, fresh, info, settings.request.rerun_failed, now_iso(), settings.request, damaged
        )
    else:
        assert found is not None  # a fresh run's provenance is asked before its directory is made
        manifest = new_manifest(store, settings, list(fresh.values()), info, found)
        to_run = list(plan.invocations)
    book = RecordBook(manifest, store.save_manifest, files=ManifestFiles(store))
    book.save()
    store.point_latest()
    return book, to_run, _redone_note(damaged)


def _redone_note(damaged: dict[str, str]) -> tuple[str, ...]:
    if not damaged:
        return ()
    shown = "; ".join(f"{name}: {why}" for name, why in list(damaged.items())[:5])
    more = f"; and {len(damaged) - 5} more" if len(damaged) > 5 else ""
    return (f"{len(damaged)} ok target(s) run again: their kept reports are not what the run recorded ({shown}{more})",)
