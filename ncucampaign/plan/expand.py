"""Campaign -> plan: one `Invocation` per ncu run, with inheritance, matrix expansion and the options ncu needs
implicitly (--nvtx, --call-stack-type, --kill). Pure: no I/O, no processes."""

from __future__ import annotations

import fnmatch
import functools
import itertools
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ncucampaign.errors import Problem
from ncucampaign.plan.checks import too_many_bytes, too_many_invocations, unknown_codes
from ncucampaign.plan.command import PlanProblems, command_argv
from ncucampaign.plan.implied import implied_options
from ncucampaign.plan.matrix import checked_matrix, expanded_name
from ncucampaign.spec.keys import OPTION_KEYS, field_name
from ncucampaign.spec.loader import LoadedCampaign
from ncucampaign.spec.model import NAME_PATTERN, Target, TargetOptions

DEFAULT_TIMEOUT_S = 1800.0
DEFAULT_RETRIES = 1
DEFAULT_RETRY_DELAY_S = 10.0
MAX_RETRY_WAIT_S = 300.0  # one wait before a retry (the delay doubles each time) is at most this
DEFAULT_STOP_GRACE_S = 20.0
DEFAULT_STALL_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Invocation:
    """One ncu run: everything needed to build its command line and judge its result."""

    name: str
    target: str
    target_index: int
    matrix: tuple[tuple[str, Any], ...]
    options: TargetOptions
    app_argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    cwd: Path
    timeout: float
    retries: int
    retry_delay: float
    stop_grace: float
    stall_timeout: float = DEFAULT_STALL_TIMEOUT_S
    expect_launch_count: bool = True  # False: launch_count is only an upper bound (discovery)

    @property
    def expected_results(self) -> int | None:
        """How many results the report must hold, when the options make that knowable."""
        if not self.expect_launch_count or self.options.filter_mode not in (None, "global"):
            return None  # per-gpu / per-launch-config: the count applies per group
        return self.options.launch_count


@dataclass(frozen=True)
class Plan:
    campaign: str
    source: Path
    ncu: str
    invocations: tuple[Invocation, ...]

    def select(self, names: Iterable[str]) -> Plan:
        """Keep invocations named (or expanded from a target named) in `names`, each a name or a shell-style pattern
        (`rms_00*`, `gemm_?`, `t[0-4]`); a name or pattern that keeps nothing raises KeyError."""
        keys = [(inv.name, inv.target) for inv in self.invocations]
        chosen = matching(names, [name for pair in keys for name in pair])
        kept = tuple(inv for inv, (name, target) in zip(self.invocations, keys, strict=True) if {name, target} & chosen)
        return Plan(self.campaign, self.source, self.ncu, kept)

    def names(self) -> list[str]:
        return [inv.name for inv in self.invocations]


def matching(patterns: Iterable[str], names: Sequence[str]) -> set[str]:
    """The names a list of names and shell-style patterns keeps; KeyError with the first that keeps none. A target's
    name holds no *, ? or [ (spec/model.py), so a word with one is a pattern."""
    known, chosen = set(names), set()
    for pattern in patterns:
        found = set(fnmatch.filter(known, pattern)) if any(c in pattern for c in "*?[") else {pattern} & known
        if not found:
            raise KeyError(pattern)
        chosen |= found
    return chosen


def build_plan(loaded: LoadedCampaign, ncu: str | None = None) -> Plan:
    """Expand and resolve every target; raises the campaign's CampaignError listing all problems."""
    invocations, problems = expand(loaded)
    if problems:
        raise loaded.error(problems)
    return Plan(
        campaign=loaded.name,
        source=loaded.path,
        ncu=ncu or loaded.campaign.ncu or "ncu",
        invocations=tuple(invocations),
    )


def plan_problems(loaded: LoadedCampaign) -> list[Problem]:
    """What planning finds wrong (matrices, names, commands), located; for a partial campaign too."""
    return loaded.locate(expand(loaded)[1])


def expand(loaded: LoadedCampaign) -> tuple[list[Invocation], list[Problem]]:
    too_many = too_many_invocations(loaded) or too_many_bytes(loaded)
    if too_many:
        return [], [too_many]
    problems: list[Problem] = []
    application = loaded.campaign.application
    try:  # once for all targets (and even when no target is valid)
        command_argv(application.command, application.shell, ("application", "command"))
    except PlanProblems as exc:
        problems.extend(exc.problems)
    invocations: list[Invocation] = []
    for position, target in enumerate(loaded.campaign.targets):
        try:
            invocations.extend(_expand_target(loaded, loaded.index_of(position), target))
        except PlanProblems as exc:
            problems.extend(exc.problems)
    problems.extend(_duplicate_names(invocations))
    problems.extend(unknown_codes(loaded))
    return invocations, problems


def _duplicate_names(invocations: list[Invocation]) -> list[Problem]:
    problems = []
    first: dict[str, Invocation] = {}
    for inv in invocations:
        earlier = first.setdefault(inv.name, inv)
        if earlier is not inv:
            where = (
                "an earlier expansion of this target"
                if earlier.target_index == inv.target_index
                else (f"targets[{earlier.target_index}]")
            )
            problems.append(
                Problem(("targets", inv.target_index, "name"), f"name {inv.name!r} is already used by {where}")
            )
    return problems


# --- expansion --------------------------------------------------------------------------------------------


def _expand_target(loaded: LoadedCampaign, index: int, target: Target) -> list[Invocation]:
    here: tuple[str | int, ...] = ("targets", index)
    matrix = checked_matrix(target, here)
    placeholders = set(re.findall(r"\{([^{}]*)\}", target.name))
    unknown = placeholders - {key for key, _ in matrix}
    if unknown:
        raise PlanProblems(
            [Problem((*here, "name"), f"placeholder {{{sorted(unknown)[0]}}} is not a key of this target's matrix")]
        )
    keys = [key for key, _ in matrix]
    combos = itertools.product(*(values for _, values in matrix)) if matrix else [()]
    invocations = []
    for combo in combos:
        chosen = tuple(zip(keys, combo, strict=True))
        name = expanded_name(target.name, chosen)
        if not re.match(NAME_PATTERN, name):
            raise PlanProblems([Problem((*here, "name"), f"expanded name {name!r} is not a valid target name")])
        options = _resolve_options(loaded.campaign.defaults, target, dict(chosen), here)
        invocations.append(_invocation(loaded, index, target, name, chosen, options))
    return invocations


# --- resolution ------------------------------------------------------------------------------------------

_FIELD_OF = {key: field_name(key) for key in OPTION_KEYS}
_OPTION_FIELDS = frozenset(TargetOptions.model_fields)
# Every field None (not set), copied with a target's values: a sixth of model_construct's cost, which looks up
# all 51 fields' defaults again for each of 10,000 targets (bench.py plan).
_UNSET = TargetOptions.model_construct(_fields_set=set(), **dict.fromkeys(TargetOptions.model_fields))


def _resolve_options(
    defaults: TargetOptions, target: Target, chosen: dict[str, Any], here: tuple[str | int, ...]
) -> TargetOptions:
    # What is set, later over earlier: defaults, the target, its matrix's values (a target sets a few of 51 fields).
    values = {name: getattr(defaults, name) for name in defaults.model_fields_set & _OPTION_FIELDS}
    values.update({name: getattr(target, name) for name in target.model_fields_set & _OPTION_FIELDS})
    values.update({_FIELD_OF[key]: value for key, value in chosen.items() if key in _FIELD_OF})
    env = {**(defaults.env or {}), **(target.env or {}), **(chosen.get("env") or {})}
    values["env"] = env or None
    # Codes silenced in defaults stay silenced: a target's lint_ignore adds to them.
    ignored = (*(defaults.lint_ignore or ()), *(target.lint_ignore or ()), *(chosen.get("lint_ignore") or ()))
    values["lint_ignore"] = tuple(dict.fromkeys(ignored)) or None
    values.update(implied_options(values, here))
    return _UNSET.model_copy(update=values)


def _invocation(
    loaded: LoadedCampaign,
    index: int,
    target: Target,
    name: str,
    chosen: tuple[tuple[str, Any], ...],
    options: TargetOptions,
) -> Invocation:
    app = loaded.campaign.application
    here: tuple[str | int, ...] = ("targets", index)
    command = target.command if target.command is not None else app.command
    where = (*here, "command") if target.command is not None else ("application", "command")
    app_argv = command_argv(command, app.shell, where) + tuple(options.args or ())
    env = {**app.env, **(options.env or {})}
    files = {  # config and renames files, relative to the campaign file as its other paths are
        key: str(_working_directory(loaded.base_dir, value))
        for key, value in (("config_file", options.config_file), ("rename_kernels", options.rename_kernels))
        if isinstance(value, str)
    }
    if files:
        options = options.model_copy(update=files)
    return Invocation(
        name=name,
        target=target.name,
        target_index=index,
        matrix=chosen,
        options=options,
        app_argv=app_argv,
        env=tuple(sorted(env.items())),
        cwd=_working_directory(loaded.base_dir, app.cwd),
        timeout=options.timeout if options.timeout is not None else DEFAULT_TIMEOUT_S,
        retries=options.retries if options.retries is not None else DEFAULT_RETRIES,
        retry_delay=options.retry_delay if options.retry_delay is not None else DEFAULT_RETRY_DELAY_S,
        stop_grace=options.stop_grace if options.stop_grace is not None else DEFAULT_STOP_GRACE_S,
        stall_timeout=options.stall_timeout if options.stall_timeout is not None else DEFAULT_STALL_TIMEOUT_S,
    )


def _working_directory(base_dir: Path, cwd: str | None) -> Path:
    # Keyed on the current directory too: one keyed on a relative folder alone gave a later call from another
    # directory the first call's answer (one process running two campaigns, as the tests do).
    return _absolute(base_dir, cwd, os.getcwd())


@functools.lru_cache(maxsize=256)  # every target of a campaign usually has the same folders: 40,000 Paths at 10,000
def _absolute(base_dir: Path, cwd: str | None, _current: str) -> Path:
    return Path(os.path.normpath((base_dir / cwd if cwd else base_dir).absolute()))
