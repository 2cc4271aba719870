"""A plan as text and data, for `plan`: the targets that run alone, and the shared runs (exact commands; where a
discovery trace decides the grouping at run time, each target's own command). Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ncucampaign.errors import plural
from ncucampaign.plan.argv import ncu_argv, shell_command
from ncucampaign.plan.expand import Plan
from ncucampaign.plan.share.cost import UNION_LAUNCHES
from ncucampaign.plan.share.groups import SharedGroup, SharePlan
from ncucampaign.plan.share.union import filter_words, split_argv, trace_invocation, trace_launches, with_options
from ncucampaign.plan.share.windows import split_command, targets_windows

FROM_TRACE = "<from-the-trace>"


def group_data(group: SharedGroup, ncu: str, report_dir: Path, suffix: str) -> dict[str, Any]:
    """The group's commands; with a trace window the skip and counts it decides are placeholders."""
    shared = report_dir / "shared"
    by_trace = group.window == "trace"
    union = with_options(group.union, launch_skip=FROM_TRACE, launch_count=FROM_TRACE) if by_trace else group.union
    report = report_dir / f"{group.name}{suffix}"  # reports/shared/N, as the run writes it
    splits = {}
    windows = {} if by_trace else targets_windows(group.members)  # the trace's exist only at run time
    for member in group.members:
        out = report_dir / f"{member.name}{suffix}"
        if by_trace:
            count = member.options.launch_count or 1
            argv = split_argv(ncu, report, filter_words(member.options), FROM_TRACE, count, out)
        else:
            argv = split_command(ncu, report, member, windows[member.name], out)
        splits[member.name] = shell_command(argv)
    own = {m.name: shell_command(ncu_argv(m, ncu, report_dir, suffix), m.env, m.cwd) for m in group.members}
    data: dict[str, Any] = {
        "name": group.name,
        "window": group.window,
        "members": [m.name for m in group.members],
        "union": shell_command(ncu_argv(union, ncu, report_dir, suffix), union.env, union.cwd),
        "splits": splits,
        "own": own,
    }
    if by_trace:
        trace = trace_invocation(group.members, trace_launches(group.members))
        data["trace"] = shell_command(ncu_argv(trace, ncu, shared, suffix), trace.env, trace.cwd)
    return data


PLAN_NAMES = 32  # a plan's comment names a shared run's members up to this many (300 made a line of 2,747 characters)


def short_names(names: Sequence[str], shown: int = 6) -> str:
    """Names as a line reads them at any count: all of them up to `shown`, else the first few, the last, and how many
    ('rms_0, rms_1, rms_2 ... gemm_149, 300 targets')."""
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[: shown // 2])} ... {names[-1]}, {len(names)} targets"


def share_lines(shares: SharePlan, ncu: str, report_dir: Path, suffix: str) -> list[str]:
    """The shared runs as lines bash can run: a group with a window from the targets as its union and splits; a
    trace pool as its targets' own commands and its trace commented (it is partitioned only at run time)."""
    lines = []
    for group in shares.groups:
        data = group_data(group, ncu, report_dir, suffix)
        members = short_names(data["members"], shown=PLAN_NAMES)
        if group.window == "trace":
            # Only a run reads the trace and groups its targets: pasted, every target runs on its own
            # (a pasted plan ran the trace and nothing else, 0 of run's reports).
            lines.append(
                f"# {group.name}: ncucampaign run would share {members} after a discovery trace that only "
                "the run reads; pasted, each runs on its own:"
            )
            lines.append(f"#   the discovery trace (cached per command, workload, ncu and GPU): {data['trace']}")
            lines.extend(str(own) for own in data["own"].values())
        else:
            lines.append(f"# {group.name}: one application run for {members} (window from the targets)")
            lines.append(str(data["union"]))
            lines.extend(str(split) for split in data["splits"].values())
            lines.append("# a target whose split cannot be verified runs alone:")
            lines.extend(f"#   {member}: {own}" for member, own in data["own"].items())
    return lines


def _groups_said(shares: SharePlan) -> str:
    """The shared groups in the words validate's cost line uses: a trace pool is one discovery trace and at least
    as many unions as its wanted launches fill (the run partitions it once the trace is known), any other group one
    application run ('1 shared group' here read against validate's '5 at the fewest')."""
    pools = [g for g in shares.groups if g.window == "trace"]
    fixed = len(shares.groups) - len(pools)
    unions = sum(math.ceil(sum(m.options.launch_count or 1 for m in g.members) / UNION_LAUNCHES) for g in pools)
    said = []
    if pools:
        each = "a discovery trace" + (" each" if len(pools) > 1 else "")
        said.append(f"{plural(len(pools), 'trace pool')} ({each}, then at least {plural(unions, 'union')})")
    if fixed:
        said.append(f"{plural(fixed, 'group')} of one application run each")
    starts = len(pools) + unions + fixed
    return f"{' and '.join(said)}: {plural(starts, 'application start')} at the fewest, as validate counts"


def plan_text(
    plan: Plan, argvs: dict[str, list[str]], shares: SharePlan, report_dir: Path, source: str, suffix: str
) -> list[str]:
    """`plan`'s output: exactly what `run` does, pasteable into bash (nothing it cannot run is left
    uncommented): the targets that run alone as their own commands, the others as their shared runs."""
    count, alone = len(plan.invocations), [inv for inv, _ in shares.alone]
    shared = sum(len(group.members) for group in shares.groups)
    parts = f" ({len(alone)} alone, {shared} shared)" if alone and shared else ""
    lines = [f"# ncucampaign plan: {plan.campaign} ({source}): {plural(count, 'ncu invocation')}{parts}"]
    lines.append(f"mkdir -p {shell_command([str(report_dir)])}")
    for position, inv in enumerate(alone, 1):
        lines.append(f"# [{position}/{len(alone)} alone] {inv.name}")
        lines.append(shell_command(argvs[inv.name], inv.env, inv.cwd))
    if shares.groups:
        lines.append(f"# --- {shared} targets shared: {_groups_said(shares)}; each is split out on import and verified")
        lines.append("# (run --no-share: every target alone)")
        lines.append(f"mkdir -p {shell_command([str(report_dir / 'shared')])}")
        lines.extend(share_lines(shares, plan.ncu, report_dir, suffix))
    return lines
