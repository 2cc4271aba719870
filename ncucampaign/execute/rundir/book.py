"""Where a run's records go: the manifest in memory, written after every change through the function handed in
(manifest.json, or a batch task's record). Everything changes records through `commit`: a crash loses none."""

from __future__ import annotations

import datetime
import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ncucampaign.execute.rundir.manifest import Manifest, SharedRunRecord, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunDir
from ncucampaign.own_time import CLOCK, RECORDS
from ncucampaign.plan.argv import shell_command
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.cost import per_launch_s
from ncucampaign.plan.share.groups import shared_run_name


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
        status=Status.PENDING,
        log=run.relative(run.log(inv.name)),
    )


class RecordBook:
    """The manifest of one run (or batch task) and the lock every change takes. `write` saves its JSON;
    `shared_prefix` names its shared runs ("shared/<job>_<task>-" in a task: siblings share reports/shared/)."""

    def __init__(self, manifest: Manifest, write: Callable[[Any], object], shared_prefix: str = "shared/") -> None:
        self.manifest = manifest
        self.records: dict[str, TargetRecord] = {record.name: record for record in manifest.targets}
        self._write, self.shared_prefix = write, shared_prefix
        self._lock = threading.RLock()

    def commit(self, change: Callable[[], None]) -> None:
        with self._lock:
            change()
            self.save()

    def save(self) -> None:
        with self._lock, CLOCK.phase(RECORDS):
            self._write(self.manifest.model_dump(mode="json"))

    def new_shared_run(self, name: str | None, build: Callable[[str], SharedRunRecord]) -> SharedRunRecord:
        """Enter a shared run (or trace) built under its name: `name`, or the next union's
        (shared/1, shared/2, ...), taken and entered at once so that two GPU lanes never share one."""
        with self._lock:
            if name is None:
                unions = sum(1 for r in self.manifest.shared_runs if r.kind == "union")
                name = shared_run_name(unions + 1, self.shared_prefix)
            record = build(name)
            self.commit(lambda: self.manifest.shared_runs.append(record))
            return record
