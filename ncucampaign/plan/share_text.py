"""The shared runs of a plan as text and data, for `plan` (the commands are exact except for the
window a discovery trace decides at run time). Pure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ncucampaign.plan.argv import ncu_argv, shell_command
from ncucampaign.plan.share import SharedGroup, SharePlan
from ncucampaign.plan.union import TRACE_LAUNCHES, filter_words, split_argv, trace_invocation, with_options

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
        trace = trace_invocation(group.members, TRACE_LAUNCHES)
        data["trace"] = shell_command(ncu_argv(trace, ncu, shared), trace.env, trace.cwd)
    return data


def share_lines(shares: SharePlan, ncu: str, report_dir: Path) -> list[str]:
    lines = []
    for group in shares.groups:
        data = group_data(group, ncu, report_dir)
        members = ", ".join(data["members"])
        if group.window == "trace":
            lines.append(
                f"# {group.name}: one discovery trace for {members}; the run groups them by cost on it (shared "
                "runs of launches close together, the rest alone) and takes each window from it"
            )
        else:
            lines.append(f"# {group.name}: one application run for {members} (window from the targets)")
        if "trace" in data:
            lines.append("# discovery trace (cached per command, workload commit, ncu and GPU):")
            lines.append(str(data["trace"]))
        lines.append(str(data["union"]))
        lines.extend(str(split) for split in data["splits"].values())
    return lines
