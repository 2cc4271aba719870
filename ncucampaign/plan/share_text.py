"""The shared runs of a plan as text and data, for `plan` (the commands are exact except for the
window a discovery trace decides at run time). Pure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ncucampaign.plan.argv import ncu_argv, shell_command
from ncucampaign.plan.share import SharedGroup, SharePlan
from ncucampaign.plan.union import filter_words, split_argv, trace_invocation, trace_launches, with_options

FROM_TRACE = "<from-the-trace>"


def group_data(group: SharedGroup, ncu: str, report_dir: Path) -> dict[str, Any]:
    """The group's commands; with a trace window the skip and counts it decides are placeholders."""
    shared = report_dir / "shared"
    by_trace = group.window == "trace"
    union = with_options(group.union, launch_skip=FROM_TRACE, launch_count=FROM_TRACE) if by_trace else group.union
    report = shared / f"{group.name}.ncu-rep"
    splits = {}
    for member in group.members:
        filters = filter_words(member.options) if by_trace else []
        skip: int | str = FROM_TRACE if by_trace else group.skip_in_union(member)
        argv = split_argv(ncu, report, filters, skip, member.options.launch_count or 1, report_dir / member.name)
        splits[member.name] = shell_command(argv)
    data: dict[str, Any] = {
        "name": group.name,
        "window": group.window,
        "members": [m.name for m in group.members],
        "union": shell_command(ncu_argv(union, ncu, shared), union.env, union.cwd),
        "splits": splits,
    }
    if by_trace:
        trace = trace_invocation(group.members, trace_launches(group.members))
        data["trace"] = shell_command(ncu_argv(trace, ncu, shared), trace.env, trace.cwd)
    return data


def share_lines(shares: SharePlan, ncu: str, report_dir: Path) -> list[str]:
    lines = []
    for group in shares.groups:
        data = group_data(group, ncu, report_dir)
        origin = "the discovery trace" if group.window == "trace" else "the targets"
        members = ", ".join(data["members"])
        lines.append(f"# {group.name}: one application run for {members} (window from {origin})")
        if "trace" in data:
            lines.append("# discovery trace (cached per command, workload commit, ncu and GPU):")
            lines.append(str(data["trace"]))
        lines.append(str(data["union"]))
        lines.extend(str(split) for split in data["splits"].values())
    return lines
