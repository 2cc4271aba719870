"""`ncucampaign discover`: run the cheap pass through the normal runner (run directory, manifest,
timeouts, diagnosis), then read its report and write kernels.json and targets.yaml beside it."""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ncucampaign.classify import Status
from ncucampaign.discover import (
    SCOPE_KEYS,
    KernelSummary,
    ListedLaunch,
    Mode,
    discovery_invocation,
    launch_limit_for,
    mark_target_launches,
    short,
    suggest_targets,
    suggestions_yaml,
    summarize_kernels,
)
from ncucampaign.errors import EXIT_OK, EXIT_TARGETS_FAILED, EnvironmentProblem, UsageError
from ncucampaign.loader import LoadedCampaign, parse_campaign
from ncucampaign.model import Target
from ncucampaign.plan import Invocation, Plan, build_plan
from ncucampaign.process import StopRequest
from ncucampaign.reports import Launch, ReportUnreadable, nvtx_selected, read_launches
from ncucampaign.rundir import write_json_atomic, write_text_atomic
from ncucampaign.runner import CampaignRun, Reporter, RunResult, RunSettings

# Suggestions inherit these from the campaign's defaults when pasted; repeating them adds noise.
_NOT_SUGGESTED = ("timeout", "stop_grace", "clock_control", "cache_control")


@dataclass(frozen=True)
class DiscoveryRequest:
    mode: Mode
    target: str | None
    launch_limit: int | None
    top: int
    nth: int | None


def bare_command_campaign(command: Sequence[str], cwd: Path) -> LoadedCampaign:
    """A one-line campaign for `ncucampaign discover -- CMD ...`."""
    text = f"# ncucampaign discover -- {shlex.join(command)}\napplication:\n  command: {json.dumps(list(command))}\n"
    text += "targets:\n  - name: discover\n"
    return parse_campaign(text, cwd / "discover.yaml")


def discovery_plan(loaded: LoadedCampaign, plan: Plan, request: DiscoveryRequest) -> tuple[Plan, Invocation]:
    """The one-invocation plan of the pass, and the invocation whose scope or filters it uses."""
    if request.target is None:
        whole = dataclasses.replace(
            loaded, campaign=loaded.campaign.model_copy(update={"targets": (Target(name="discover"),)})
        )
        base = build_plan(whole, plan.ncu).invocations[0]
    else:
        matches = [inv for inv in plan.invocations if request.target in (inv.name, inv.target)]
        if not matches:
            raise UsageError(f"no target named {request.target!r}; targets: {', '.join(plan.names())}")
        if len(matches) > 1:
            names = ", ".join(inv.name for inv in matches)
            raise UsageError(f"{request.target!r} expands to several invocations; name one of: {names}")
        base = matches[0]
    limit = launch_limit_for(base.options, request.launch_limit)
    invocation = discovery_invocation(base, request.mode, limit)
    name = f"{plan.campaign}-discover" if loaded.path.is_file() else "discover"  # bare command: runs/discover/
    return Plan(name, plan.source, plan.ncu, (invocation,)), base


def run_discovery(
    loaded: LoadedCampaign,
    plan: Plan,
    request: DiscoveryRequest,
    settings: RunSettings,
    reporter: Reporter,
    stop: StopRequest,
    console: Console,
) -> int:
    disc_plan, base = discovery_plan(loaded, plan, request)
    result = CampaignRun(loaded, disc_plan, settings, reporter).execute(stop)
    record = result.manifest.targets[0]
    limit = disc_plan.invocations[0].options.launch_count or 0
    if record.status != Status.OK:
        console.print(f"discovery pass: {record.status.value}: {escape(record.message)}")
        return result.exit_code if result.exit_code != EXIT_OK else EXIT_TARGETS_FAILED
    report = result.run.root / (record.report.path if record.report else "")
    try:
        launches = read_launches(report, settings.ncu_path)
    except ReportUnreadable as exc:
        raise EnvironmentProblem(str(exc)) from None
    listing: dict[str, Any] = {
        "report": str(report),
        "launch_limit": limit,
        "launches": [dataclasses.asdict(launch) for launch in launches],
    }
    truncated = len(launches) >= limit
    if request.mode == "target":
        listed = mark_target_launches(launches, base.options)
        listing["target"] = {
            "name": base.name,
            "launch_skip": base.options.launch_skip or 0,
            "launch_count": base.options.launch_count,
        }
        listing["listed"] = [{"ordinal": item.launch.ordinal, "profiled": item.profiled} for item in listed]
        console.print(target_table(base, listed))
    else:
        kernels = summarize_kernels(launches)
        listing["kernels"] = [dataclasses.asdict(kernel) for kernel in kernels]
        scoped = request.mode == "scope"
        base_options = _scope_options(base) if scoped else {}

        def in_scope(expression: str) -> set[tuple[int, int]]:
            return nvtx_selected(report, [expression], settings.ncu_path)

        suggestions = suggest_targets(
            kernels, launches, None if scoped else in_scope, base_options, request.top, request.nth
        )
        listing["suggestions"] = [dataclasses.asdict(suggestion) for suggestion in suggestions]
        text = suggestions_yaml(suggestions)
        write_text_atomic(result.run.inside("targets.yaml"), text)
        console.print(kernel_table(kernels, len(launches), limit))
        console.print("\nSuggested targets (paste under targets:):\n")
        console.print(escape(text), highlight=False, soft_wrap=True)
    if truncated:
        console.print(f"note: the pass stopped at its launch limit ({limit}); raise --launch-limit to see more.")
    write_json_atomic(result.run.inside("kernels.json"), listing)
    _print_paths(console, result)
    return EXIT_OK


def _scope_options(base: Invocation) -> dict[str, Any]:
    """The scope target's own filters, as plain YAML-ready values."""
    options: dict[str, Any] = {}
    for key in SCOPE_KEYS:
        value = getattr(base.options, key)
        if value is None or key in _NOT_SUGGESTED:
            continue
        options[key] = list(value) if isinstance(value, tuple) else value
    return options


def _print_paths(console: Console, result: RunResult) -> None:
    console.print(f"run directory: {result.run.root} (kernels.json, targets.yaml, reports/, logs/)", highlight=False)


def kernel_table(kernels: Sequence[KernelSummary], launches: int, limit: int) -> Table:
    table = Table(
        title=f"{launches} launches of {len(kernels)} kernel{'s' if len(kernels) != 1 else ''} "
        f"(launch limit {limit}), by GPU time",
        box=box.SIMPLE_HEAD,
        title_justify="left",
    )
    for column in ("kernel", "demangled", "launches", "total us", "mean us", "share", "NVTX"):
        table.add_column(column, justify="right" if column in ("launches", "total us", "mean us", "share") else "left")
    for kernel in kernels:
        paths = ", ".join(f"{path or '(none)'} ({count})" for path, count in kernel.nvtx[:3])
        if len(kernel.nvtx) > 3:
            paths += ", ..."
        table.add_row(
            escape(short(kernel.function, 40)),
            escape(short(kernel.demangled, 40)),
            str(kernel.launches),
            f"{kernel.total_ns / 1000:.1f}",
            f"{kernel.mean_ns / 1000:.2f}",
            f"{kernel.share:.1%}",
            escape(paths),
        )
    return table


def target_table(base: Invocation, listed: Sequence[ListedLaunch]) -> Table:
    skip = base.options.launch_skip or 0
    count = base.options.launch_count
    picked = [item.launch.ordinal for item in listed if item.profiled]
    title = (
        f"{base.name}: {len(listed)} launches match its filters (ncu filtered them); "
        f"launch_skip {skip}, launch_count {count if count is not None else 'all'} profile "
        + (f"#{picked[0]}" + (f"..#{picked[-1]}" if len(picked) > 1 else "") if picked else "none of them")
    )
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    for column in ("launch_skip", "kernel", "us", "NVTX", ""):
        table.add_column(column, justify="right" if column in ("launch_skip", "us") else "left")
    for item in listed:
        launch: Launch = item.launch
        table.add_row(
            str(launch.ordinal),
            escape(short(launch.function, 50)),
            f"{launch.duration_ns / 1000:.2f}" if launch.duration_ns is not None else "-",
            escape(", ".join(launch.nvtx)),
            "[bold green]<- profiled[/]" if item.profiled else "",
        )
    return table
