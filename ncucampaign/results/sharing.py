"""How a run's targets were obtained, in a few lines: the traces, each shared run's profiled launches against
those wanted, the verdicts taken on a trace, and the targets that ran alone with why. Pure."""

from __future__ import annotations

from collections import Counter

from ncucampaign.errors import printable
from ncucampaign.execute.rundir.manifest import Manifest, SharedRunRecord, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.share.text import short_names
from ncucampaign.results.limit import by_tracers

UNIONS_SHOWN = 6  # shared runs named one by one in the breakdown; the others counted
NOT_USED = "not used: "  # how a trace that was taken and then refused says why (execute/trace)
TRACE_WHY = 160  # characters of that reason in the line; the trace's log and record hold it whole


def how_obtained(record: TargetRecord) -> str:
    """'shared/1' (split out of that run), 'trace' (decided on the discovery trace), 'alone', or '-'."""
    obtained = record.obtained
    if obtained is None:
        return "-"
    if obtained.how == "shared":
        return obtained.shared_run or "shared"
    return obtained.how


def _trace_part(trace: SharedRunRecord) -> str:
    used = f", its {trace.trace.launches} launches used" if trace.status != Status.OK and trace.trace else ""
    how = f"{trace.status.value}{used}"
    if trace.status != Status.OK and not trace.trace and trace.message.startswith(NOT_USED):
        how = trace.message[:TRACE_WHY]  # it ran, and why it was refused says more than the status
    elif trace.trace and trace.trace.declined:
        how += f"; {trace.trace.declined[:TRACE_WHY]}"  # a tracer before it that never ran: said only here
    return f"trace {by_tracers([trace])} {trace.seconds:.1f} s ({how})"


def sharing_breakdown(manifest: Manifest) -> list[str]:
    """The breakdown `run` prints at its end; [] when no target shared or was decided on a trace."""
    targets = {t.name: t for t in manifest.targets}
    hows = {name: how_obtained(record) for name, record in targets.items()}
    traces = [r for r in manifest.shared_runs if r.kind == "trace"]
    unions = [r for r in manifest.shared_runs if r.kind == "union"]
    if not unions and not traces and "trace" not in hows.values():
        return []
    parts = [_trace_part(trace) for trace in traces]
    cached = next((u.trace for u in unions if u.trace is not None and u.trace.reused), None)
    if not traces and cached is not None:
        parts.append("trace cached" + (f" ({cached.declined[:TRACE_WHY]})" if cached.declined else ""))
    for union in unions[:UNIONS_SHOWN]:
        wanted = sum(targets[m].expected_results or 0 for m in union.members if m in targets)
        profiled = union.launch_count
        launches = f"{profiled} launches for {wanted} wanted" if profiled is not None else f"{wanted} wanted"
        parts.append(
            f"{union.name}: {union.status.value}, {launches}, {len(union.members)} targets, {union.seconds:.1f} s"
        )
    if len(unions) > UNIONS_SHOWN:
        rest = unions[UNIONS_SHOWN:]
        statuses = ", ".join(f"{n} {s}" for s, n in Counter(u.status.value for u in rest).most_common())
        members, seconds = sum(len(u.members) for u in rest), sum(u.seconds for u in rest)
        parts.append(f"{len(rest)} more shared runs: {statuses}, {members} targets, {seconds:.1f} s")
    decided = [name for name, how in hows.items() if how == "trace"]
    kept = {name: obtained.miss_run for name in decided if (obtained := targets[name].obtained) and obtained.miss_run}
    if len(kept) < len(decided):
        parts.append(f"decided on the trace: {short_names([name for name in decided if name not in kept])}")
    for run in dict.fromkeys(kept.values()):
        closed = [name for name, where in kept.items() if where == run]
        parts.append(f"closed on misses their own runs found in run {run}: {short_names(closed)}")
    alone = [(name, targets[name].obtained) for name, how in hows.items() if how == "alone"]
    if alone:
        parts.append(f"{len(alone)} alone")
    by_reason: dict[str, list[str]] = {}  # one line a reason: a trace that failed gave every member its own
    for name, obtained in alone:
        if obtained is not None:
            by_reason.setdefault(obtained.reason, []).append(name)
    lines = ["sharing: " + " | ".join(parts)]
    lines.extend(f"  alone: {short_names(names)}: {reason}" for reason, names in by_reason.items())
    return [printable(line) for line in lines]  # names and reasons hold ncu's and the application's text
