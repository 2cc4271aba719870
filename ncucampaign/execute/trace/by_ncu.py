"""The tracer ncu: the application under ncu with one metric, the first launches the members' filters select
(plan/share/union.py), with the usual attempts (a trace cut by its timeout keeps what it traced); listed with
`ncu --import`, each distinct filter once, the listings kept beside a cached trace (listings.py). ncu applies the
members' filters on import as in their own runs: a member whose filters select nothing in a trace that ran to the
end is closed on it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ncucampaign.execute.attempt.attempts import run_attempts
from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.attempt.shared_record import new_shared_record
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.trace.cache.store import TraceCache, TraceKey
from ncucampaign.execute.trace.contract import Kept, Readiness, Taken, TraceAsk, trace_name
from ncucampaign.execute.trace.listings import BY_FUNCTION, Listings, Wanted, disagreement
from ncucampaign.execute.trace.ncu_import import IMPORT_WORKERS, ImportFailed, importer_of, list_launches
from ncucampaign.own_time import CLOCK, TRACE_LISTING
from ncucampaign.plan.share.cost import TRACED_LAUNCH_S
from ncucampaign.plan.share.launches import Launch
from ncucampaign.plan.share.union import FUNCTIONS, SYMBOLS, import_csv_argv


class NcuTracer:
    name = "ncu"
    label = "ncu"
    launch_s = TRACED_LAUNCH_S
    stops_at_count = True  # the trace is a union: kill yes (plan/share/union.py)
    needs_confirming = False  # its listing is ncu's own

    def readiness(self, ncu_path: str, environ: Mapping[str, str]) -> Readiness:
        return Readiness(True, ncu_path)

    def stand_in(self, ask: TraceAsk, ncu_path: str) -> TraceKey | str:
        return ask.key  # ncu traces whatever ncu profiles

    def take(self, ctx: RunContext, ask: TraceAsk, key: TraceKey, work: Path) -> Taken | str:
        trace = dataclasses.replace(ask.trace, name=trace_name(key), target=f"trace-{key.short}")
        record = new_shared_record(
            ctx, trace, ask.members, "trace", ask.gpus, kind="trace", traced_by=self.name, launch_s=self.launch_s
        )
        run_attempts(ctx, trace, record.argv, record, ask.lane, read_results=False)
        # Stopped by its timeout, ncu writes what it traced until then (docs/ncu-behaviour.md, "Signals"): a trace
        # of those launches, which places every member whose launches came before the cut. So does an application
        # that exited non-zero with its report written (after its work: 74 launches traced, then every target had
        # run alone, 41 starts where 3 do); a member whose launches it does not hold runs alone.
        cut = record.status in (Status.TIMED_OUT, Status.APP_FAILED)
        if (record.status != Status.OK and not cut) or record.report is None:
            return f"the discovery trace {record.name} ended {record.status.value}: {record.message}"
        return Taken(Kept(ctx.run.root / record.report.path, key.digest), record, record.seconds, cut=cut)

    def listings(self, ctx: RunContext, cache: TraceCache, kept: Kept, wanted: Wanted) -> Listings | str:
        """What ncu lists, less what an earlier run kept of this trace; what was kept but does not
        hold is listed again, and what holds is kept for the next run."""
        earlier = cache.listings(kept.digest, kept.path)
        listed = list_trace(ctx, kept.path, wanted, earlier)
        if earlier and (isinstance(listed, str) or disagreement(listed) is not None):
            cache.forget_listings(kept.digest)
            earlier, listed = {}, list_trace(ctx, kept.path, wanted)
        if not isinstance(listed, str) and disagreement(listed) is None and any(w not in earlier for w in listed):
            cache.keep_listings(kept.digest, kept.path, {**earlier, **listed})
        return listed


def list_trace(ctx: RunContext, report: Path, wanted: Wanted, kept: Listings | None = None) -> Listings | str:
    """Every wanted listing of the report, by symbol, each distinct filter once and all at once, but those `kept` holds
    (an earlier run's). BY_FUNCTION lists every launch by the function name --kernel-id numbers launches by; it is left
    out when ncu cannot list it (then no picked windows). A string: the trace cannot be listed."""
    kept = kept or {}
    distinct = [words for words in wanted if words not in kept]
    ncu, importer = ctx.ncu_path, importer_of(ctx)

    def listing(words: tuple[str, ...]) -> list[Launch] | None:
        with CLOCK.phase(TRACE_LISTING):
            if words != BY_FUNCTION:
                return list_launches(import_csv_argv(ncu, report, list(words), names=SYMBOLS), importer)
            try:
                return list_launches(import_csv_argv(ncu, report, names=FUNCTIONS), importer)
            except ImportFailed:
                return None

    try:
        with ThreadPoolExecutor(IMPORT_WORKERS) as pool, CLOCK.waiting():  # the workers count their own
            found = dict(zip(distinct, pool.map(listing, distinct), strict=True))
    except ImportFailed as exc:
        return f"the discovery trace cannot be listed: {exc}"
    found.update((words, kept[words]) for words in wanted if words in kept)
    return {words: launches for words, launches in found.items() if launches is not None}
