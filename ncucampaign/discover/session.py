"""`ncucampaign discover`: run the cheap pass through the execution stage (run directory, manifest, timeouts,
diagnosis), read its report, and write kernels.json and targets.yaml beside it. Printing is the command line's job."""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ncucampaign.backends.local import start_run
from ncucampaign.discover.analysis import (
    KernelSummary,
    Mode,
    Suggestion,
    discovery_invocation,
    launch_limit_for,
    profiled_ordinals,
    suggest_targets,
    suggestions_yaml,
    summarize_kernels,
)
from ncucampaign.errors import UsageError
from ncucampaign.execute.attempt.context import Reporter
from ncucampaign.execute.prepare import RunSettings
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunStore
from ncucampaign.execute.units import RunResult
from ncucampaign.plan.expand import Invocation, Plan, build_plan
from ncucampaign.results.reading.isolated import nvtx_selected_each, read_launches
from ncucampaign.results.reading.reader import ReportedLaunch
from ncucampaign.spec.loader import LoadedCampaign, parse_campaign
from ncucampaign.spec.model import Target
from ncucampaign.spec.ncu_grammar import nvtx_scope
from ncucampaign.spec.roles import SCOPE_KEYS

# Suggestions inherit these from the campaign's defaults when pasted; repeating them adds noise.
_NOT_SUGGESTED = ("timeout", "stop_grace", "stall_timeout", "clock_control", "cache_control")


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


@dataclass(frozen=True)
class Discovery:
    """What a discovery pass found; `kernels`/`suggestions` for whole or scoped discovery; for --target, the
    launches its filters matched, and `profiled`: the ordinals its skip and count profile (None: not --target)."""

    result: RunResult
    base: Invocation
    limit: int
    launches: tuple[ReportedLaunch, ...]
    kernels: tuple[KernelSummary, ...] = ()
    suggestions: tuple[Suggestion, ...] = ()
    profiled: frozenset[int] | None = None

    @property
    def truncated(self) -> bool:
        return len(self.launches) >= self.limit

    @property
    def targets_yaml(self) -> str:
        return suggestions_yaml(self.suggestions)


def run_discovery(
    loaded: LoadedCampaign,
    plan: Plan,
    request: DiscoveryRequest,
    settings: RunSettings,
    reporter: Reporter,
    stop: StopRequest,
) -> RunResult | Discovery:
    """The pass and what it found; the pass's RunResult alone when it did not end ok."""
    disc_plan, base = discovery_plan(loaded, plan, request)
    result = start_run(loaded, disc_plan, settings, reporter, stop).execute()
    record = result.manifest.targets[0]
    if record.status != Status.OK or record.report is None:
        return result
    limit = disc_plan.invocations[0].options.launch_count or 0
    discovery = _analyse(result, result.run.root / record.report.path, base, limit, request, settings.ncu_path)
    _write(RunStore(result.run), discovery)
    return discovery


def _analyse(
    result: RunResult, report: Path, base: Invocation, limit: int, request: DiscoveryRequest, ncu: str
) -> Discovery:
    launches = read_launches(report, ncu)
    found = Discovery(result, base, limit, tuple(launches))
    if request.mode == "target":
        return dataclasses.replace(found, profiled=profiled_ordinals(launches, base.options))
    kernels = summarize_kernels(launches)
    scoped = request.mode == "scope"

    # Every expression the suggestions can ask about, answered in one read of the report.
    expressions = sorted({nvtx_scope(k.nvtx[0][0]) for k in kernels[: request.top] if k.nvtx and k.nvtx[0][0]})
    selected = nvtx_selected_each(report, expressions, ncu) if expressions and not scoped else {}

    def in_scope(expression: str) -> set[tuple[int, int]]:
        return selected[expression]

    base_options = _scope_options(base) if scoped else {}
    suggestions = suggest_targets(
        kernels, launches, None if scoped else in_scope, base_options, request.top, request.nth
    )
    return dataclasses.replace(found, kernels=tuple(kernels), suggestions=tuple(suggestions))


def _write(store: RunStore, discovery: Discovery) -> None:
    """kernels.json (every launch, the per-kernel table, the suggestions) and targets.yaml."""
    record = discovery.result.manifest.targets[0]
    report = store.run.root / (record.report.path if record.report else "")
    listing: dict[str, Any] = {
        "report": str(report),
        "launch_limit": discovery.limit,
        "launches": [dataclasses.asdict(launch) for launch in discovery.launches],
    }
    if discovery.profiled is not None and discovery.launches:
        base = discovery.base
        listing["target"] = {
            "name": base.name,
            "launch_skip": base.options.launch_skip or 0,
            "launch_count": base.options.launch_count,
        }
        listing["listed"] = [
            {"ordinal": launch.ordinal, "profiled": launch.ordinal in discovery.profiled}
            for launch in discovery.launches
        ]
    else:
        listing["kernels"] = [dataclasses.asdict(kernel) for kernel in discovery.kernels]
        listing["suggestions"] = [dataclasses.asdict(suggestion) for suggestion in discovery.suggestions]
        store.write_text("targets.yaml", discovery.targets_yaml)
    store.write_json("kernels.json", listing)


def _scope_options(base: Invocation) -> dict[str, Any]:
    """The scope target's own filters, as plain YAML-ready values."""
    options: dict[str, Any] = {}
    for key in SCOPE_KEYS:
        value = getattr(base.options, key)
        if value is None or key in _NOT_SUGGESTED:
            continue
        options[key] = list(value) if isinstance(value, tuple) else value
    return options
