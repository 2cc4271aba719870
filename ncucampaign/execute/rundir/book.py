"""Where a run's records go: the manifest in memory, every change recorded as it is made (the journal beside
manifest.json, or a batch task's whole record). Everything changes records through `commit`: a crash loses none."""

from __future__ import annotations

import contextlib
import copy
import datetime
import hashlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ncucampaign.errors import EnvironmentProblem
from ncucampaign.execute.rundir.journal import ManifestFiles, entry_of, replayed
from ncucampaign.execute.rundir.manifest import Manifest, SharedRunRecord, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunDir
from ncucampaign.own_time import CLOCK, RECORDS
from ncucampaign.plan.argv import collects_sections, shell_command
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.cost import per_launch_s
from ncucampaign.plan.share.groups import shared_run_name

CHECKED_UP_TO = 100


def now_iso() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def fingerprint(argv: Sequence[str], invocation: Invocation) -> str:
    """What makes a result reusable: the exact command, environment additions and working directory."""
    data = {"argv": list(argv), "env": dict(invocation.env), "cwd": str(invocation.cwd)}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _file_choice(value: bool | str | None) -> str | None:
    """off, on, or the file's path (None: not planned by this version)."""
    return value if isinstance(value, str) else None if value is None else "on" if value else "off"


def pending_record(inv: Invocation, argv: list[str], run: RunDir) -> TargetRecord:
    """An invocation's record before it runs."""
    return TargetRecord(
        name=inv.name,
        target=inv.target,
        matrix=dict(inv.matrix),
        argv=argv,
        shell_command=shell_command(argv, inv.env, inv.cwd),
        env=dict(inv.env),
        cwd=str(inv.cwd),
        timeout_s=inv.timeout,
        retries=inv.retries,
        expected_results=inv.expected_results,
        fingerprint=fingerprint(argv, inv),
        clock_control=inv.options.clock_control,
        config_file=_file_choice(inv.options.config_file),
        rename_kernels=_file_choice(inv.options.rename_kernels),
        launch_s=per_launch_s(inv.options),
        launch_count=inv.options.launch_count,
        metrics=list(inv.options.metrics or ()),
        collects_sections=collects_sections(inv.options),
        status=Status.PENDING,
        log=run.relative(run.log(inv.name)),
    )


class RecordBook:
    """The manifest of one run (or batch task) and the lock every change takes. A run directory's book appends each
    change to the journal (`files`, execute/rundir/journal.py) and rewrites manifest.json now and then; without
    `files` (a batch task's small record) `write` saves the whole JSON at every change. `shared_prefix` names its
    shared runs ("shared/<job>_<task>-" in a task: siblings share reports/shared/)."""

    def __init__(
        self,
        manifest: Manifest,
        write: Callable[[Any], object],
        shared_prefix: str = "shared/",
        files: ManifestFiles | None = None,
    ) -> None:
        self.manifest = manifest
        self.records: dict[str, TargetRecord] = {record.name: record for record in manifest.targets}
        self._write, self.shared_prefix, self._files = write, shared_prefix, files
        self._lock = threading.RLock()
        # NCUCAMPAIGN_CHECK_JOURNAL=1 (the tests): every change is checked to leave the journal saying what memory
        # holds, so that a commit which names not every record it changed fails where it is made (in runs of up to
        # CHECKED_UP_TO targets: the check dumps the whole manifest at every change).
        self._check: tuple[dict[str, Any], list[dict[str, Any]]] | None = None

    def commit(self, change: Callable[[], None], *touched: TargetRecord | Manifest) -> None:
        """Make a change and record it: `touched` are the records it changes (a target's, a shared run's, the
        manifest's own fields); none: the manifest's own fields."""
        with self._lock:
            change()
            if self._files is None:
                return self.save()
            with CLOCK.phase(RECORDS):
                entries = [entry_of(record, self.manifest) for record in touched or (self.manifest,)]
                self._files.append(entries)
                if self._check is not None:
                    self._checked(entries)
                if self._files.rewrite_due():
                    self._rewrite()

    def save(self) -> None:
        """The whole manifest written now (at the start and the end of a run, and where a caller needs it)."""
        with self._lock, CLOCK.phase(RECORDS):
            if self._files is None:
                self._write(self.manifest.model_dump(mode="json"))
            else:
                self._rewrite()

    def close(self) -> None:
        """The whole manifest written if the journal holds changes it lacks (a batch submission, say, ends with
        commits), then the journal let go. A failed write here leaves the changes in the journal, where readers
        find them, and never hides the failure on its way."""
        if self._files is None:
            return
        with self._lock:
            if self._files.pending:
                with contextlib.suppress(EnvironmentProblem):
                    self._rewrite()
            self._files.close()

    def _rewrite(self) -> None:
        """manifest.json from memory, by pydantic's own serializer (one string: 10,000 targets made a dict of the
        whole manifest, then a list of its JSON's pieces, over 1 GB together); indented once the run ends."""
        assert self._files is not None
        text = self.manifest.model_dump_json(indent=2 if self.manifest.state != "running" else None)
        self._files.rewrite(text)
        if os.environ.get("NCUCAMPAIGN_CHECK_JOURNAL") and len(self.manifest.targets) <= CHECKED_UP_TO:
            self._check = (json.loads(text), [])

    def _checked(self, entries: list[dict[str, Any]]) -> None:
        assert self._check is not None
        base, since = self._check
        since.extend(entries)
        expected = self.manifest.model_dump(mode="json")
        found = replayed(copy.deepcopy(base), since)
        if found != expected:
            differing = [
                r["name"] for kind in ("targets", "shared_runs") for r in expected[kind] if r not in found[kind]
            ]
            raise AssertionError(f"a change was committed without naming every record it changed: {differing[:3]}")

    def new_shared_run(self, name: str | None, build: Callable[[str], SharedRunRecord]) -> SharedRunRecord:
        """Enter a shared run (or trace) built under its name: `name`, or the next union's
        (shared/1, shared/2, ...), taken and entered at once so that two GPU lanes never share one."""
        with self._lock:
            if name is None:
                unions = sum(1 for r in self.manifest.shared_runs if r.kind == "union")
                name = shared_run_name(unions + 1, self.shared_prefix)
            record = build(name)
            self.commit(lambda: self.manifest.shared_runs.append(record), record)
            return record
