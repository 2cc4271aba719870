"""The Slurm backend's task side: one array task claims its targets and runs them as units, with the
same attempts as a local run (execute/units.py), into its own record file (execute/slurm/files.py);
`collect` merges that into the run's manifest.

The task never takes the run directory's lock (other tasks run beside it) and never sets
CUDA_VISIBLE_DEVICES: the GPUs are the ones Slurm gave it.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Sequence
from typing import Any

from ncucampaign.errors import UsageError
from ncucampaign.execute.context import Reporter, RunContext, SerialReporter
from ncucampaign.execute.executors import SequentialExecutor
from ncucampaign.execute.prepare import RunSettings
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.provenance import gpu_info
from ncucampaign.execute.rundir.book import RecordBook, now_iso, pending_record
from ncucampaign.execute.rundir.manifest import Manifest, SlurmPlacement, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.shared.traces import TraceCache
from ncucampaign.execute.slurm.collect import UNFINISHED, died
from ncucampaign.execute.slurm.files import SlurmFiles, task_stem
from ncucampaign.execute.units import RunResult, UnitRunner, execute_units
from ncucampaign.plan.argv import ncu_argv
from ncucampaign.plan.expand import Invocation, Plan
from ncucampaign.plan.gpus import VISIBLE
from ncucampaign.plan.share.groups import share_plan
from ncucampaign.plan.units import units_in_plan_order


def placement(files: SlurmFiles) -> SlurmPlacement:
    """Where this task runs, from the environment Slurm gives it."""
    env = os.environ
    if not env.get("SLURM_ARRAY_TASK_ID", "").isdigit():
        raise UsageError("slurm-task runs inside a Slurm array task (SLURM_ARRAY_TASK_ID is not set)")
    array_job, task = env.get("SLURM_ARRAY_JOB_ID", env.get("SLURM_JOB_ID", "?")), int(env["SLURM_ARRAY_TASK_ID"])
    visible = env.get(VISIBLE)
    # SLURM_JOB_GPUS holds the node's GPU indices; CUDA_VISIBLE_DEVICES may be renumbered from 0
    # where Slurm constrains devices with cgroups.
    indices = (env.get("SLURM_JOB_GPUS") or visible or "").split(",")
    known = {str(gpu.index): gpu.uuid for gpu in gpu_info() or ()}
    return SlurmPlacement(
        job_id=env.get("SLURM_JOB_ID", "?"),
        array_job_id=array_job,
        array_task_id=task,
        node=env.get("SLURMD_NODENAME") or socket.gethostname(),
        cuda_visible_devices=visible,
        gpu_uuids=[known[i] for i in indices if i in known],
        record=files.record_path(array_job, task),
    )


def slurm_gpus_kept(inv: Invocation) -> Invocation:
    """The invocation without a CUDA_VISIBLE_DEVICES of its own: Slurm's stands."""
    return dataclasses.replace(inv, env=tuple((k, v) for k, v in inv.env if k != VISIBLE))


def task_manifest(
    main: Manifest, claimed: Sequence[Invocation], where: SlurmPlacement, store: RunStore, ncu_path: str
) -> Manifest:
    """The task's manifest: the run's, holding only the claimed targets (with their earlier attempts)."""
    previous = {record.name: record for record in main.targets}
    records: list[TargetRecord] = []
    for inv in claimed:
        fresh = pending_record(inv, ncu_argv(inv, ncu_path, store.run.reports, store.run.report_suffix), store.run)
        record = previous[inv.name].model_copy(deep=True) if inv.name in previous else fresh.model_copy()
        record.argv, record.env, record.shell_command = fresh.argv, fresh.env, fresh.shell_command
        record.status, record.slurm = Status.PENDING, where
        records.append(record)
    update = {"state": "running", "started_at": now_iso(), "ended_at": None, "targets": records}
    return main.model_copy(update={**update, "shared_runs": [], "slurm_arrays": []})


def run_task(
    store: RunStore,
    plan: Plan,
    settings: RunSettings,
    reporter: Reporter,
    stop: StopRequest,
    main: Manifest,
    names: Sequence[str],
    where: SlurmPlacement,
) -> RunResult | None:
    """Claim and run `names` where `where` says (placement() in a Slurm task, a pod's placement in
    execute/k8s/task.py); None when every one of them was claimed by another task already. A pod
    that retries its index (Kubernetes starts a new one after a killed pod) takes over the claims of
    its own index, and starts from what the killed pod recorded."""
    files = SlurmFiles(store)
    by_name = {inv.name: slurm_gpus_kept(inv) for inv in plan.invocations}
    claim = {**where.model_dump(), "pid": os.getpid(), "claimed_at": now_iso()}
    earlier = _earlier_pod(files, where)
    claimed = [
        by_name[name]
        for name in names
        if name in by_name and (files.claim(name, claim) or _take_over(files, name, where, claim))
    ]
    if not claimed:
        return None
    store.make_folders()
    # No lock: the tasks of an array write into the run directory side by side, each its own files.

    def write_record(data: Any) -> None:
        store.write_json(where.record, data)

    book = RecordBook(
        task_manifest(earlier or main, claimed, where, store, settings.ncu_path),
        write_record,
        shared_prefix=f"shared/{task_stem(where.array_job_id, where.array_task_id)}-",
    )
    book.save()
    ctx = RunContext(store, book, settings.reader, SerialReporter(reporter), stop, settings.ncu_path)
    shares = share_plan(claimed, settings.share, settings.installed)
    runner = UnitRunner(ctx, TraceCache(settings.runs_root.absolute()), {i.name: why for i, why in shares.alone})
    units = units_in_plan_order(claimed, shares)
    task_plan = dataclasses.replace(plan, invocations=tuple(claimed))
    return execute_units(ctx, task_plan, units, SequentialExecutor(), runner, 0)


def _take_over(files: SlurmFiles, name: str, where: SlurmPlacement, claim: dict[str, Any]) -> bool:
    """A pod retrying its index: the claim is its own index's (the killed pod's); take it again."""
    held = files.read_claim(name) or {}
    if where.backend != "kubernetes" or held.get("backend") != "kubernetes":
        return False
    if (held.get("array_job_id"), held.get("array_task_id")) != (where.array_job_id, where.array_task_id):
        return False
    files.retire_claim(name, f"retry-{where.job_id}")
    return files.claim(name, claim)


def _earlier_pod(files: SlurmFiles, where: SlurmPlacement) -> Manifest | None:
    """What a killed pod of this index recorded (its record is rewritten by this one): its targets'
    attempts, the unfinished ones marked interrupted, so that nothing recorded is lost."""
    if where.backend != "kubernetes":
        return None
    found = files.read_record(where.record)
    if not isinstance(found, Manifest):
        return None
    targets = [died(t, {**where.model_dump(), "backend": "kubernetes"}, None) if t.status in UNFINISHED else t
               for t in found.targets]  # fmt: skip
    return found.model_copy(update={"targets": targets})
