"""A shared run's (or trace's) record, entered in the book before it starts."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.rundir.book import pending_record
from ncucampaign.execute.rundir.manifest import SharedRunRecord
from ncucampaign.execute.rundir.status import SharedRunKind
from ncucampaign.plan.argv import ncu_argv
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.union import Window


def new_shared_record(
    ctx: RunContext,
    union: Invocation,
    members: Sequence[Invocation],
    window: Window,
    gpus: tuple[str, ...] | None,
    kind: SharedRunKind = "union",
    traced_by: str | None = None,
    launch_s: float | None = None,
) -> SharedRunRecord:
    """Enter `union` in the book under a name unique in the run: its own when it is a trace ("shared/trace-<key>", with
    the tracer that takes it and what a traced launch costs), else the next union's (shared/1, ...)."""
    ctx.store.make_folders("shared")

    def build(name: str) -> SharedRunRecord:
        named = dataclasses.replace(union, name=name)
        argv = ncu_argv(named, ctx.ncu_path, ctx.run.reports, ctx.run.report_suffix)
        record = SharedRunRecord(
            **pending_record(named, argv, ctx.run).model_dump(),
            members=[m.name for m in members],
            window=window,
            kind=kind,
            tracer=traced_by,
        )
        record.gpus = list(gpus) if gpus else None
        record.launch_s = launch_s if launch_s is not None else record.launch_s
        return record

    return ctx.book.new_shared_run(union.name if kind != "union" else None, build)
