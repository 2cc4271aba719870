"""The campaign file format: pydantic models, the single source of truth.

`schemas/campaign.schema.json` is generated from `Campaign` (see `schema.py`); a test fails when the
two drift. Models are frozen; sequences are tuples. Cross-target checks (duplicate names, matrix
expansion) live in `ncucampaign.plan.expand`, because they need key paths that pydantic validators
cannot give.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from ncucampaign.spec.ncu_catalog import check_extra_args
from ncucampaign.spec.ncu_grammar import split_regex

# A target name becomes a file name (reports/<name>.ncu-rep, logs/<name>.log) and part of ncu's -o
# argument, where '%' starts a macro: letters, digits, '_', '-', '.', not starting with '.' or '-'.
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$"
# Before matrix expansion a name may hold {key} placeholders.
TEMPLATE_NAME_PATTERN = r"^[A-Za-z0-9_{][A-Za-z0-9_.{}-]{0,99}$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
RANGE_FILTER_PATTERN = r"^(yes|no|on|off)?:[^:]*:[^:]*$"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h)?\s*$")
_DURATION_UNIT = {None: 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def _one_or_many(value: Any) -> Any:
    """Accept a single scalar where a list is expected: `sections: SpeedOfLight`."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return [value]
    return value


def _comma_list(value: Any) -> Any:
    """Accept ncu's own comma-separated form too: `metrics: a,b` or `devices: "0,1"`."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return _one_or_many(value)


def _duration(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string such as '90s', '10m', '1h'")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if not match:
            raise ValueError(f"{value!r} is not a duration: use seconds (600) or '90s', '10m', '1h'")
        return float(match.group(1)) * _DURATION_UNIT[match.group(2)]
    return value


def _env_value(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError('YAML read this as a boolean; quote it ("1", "true") to pass a string')
    if isinstance(value, int | float):
        return str(value)
    return value


# json_schema_input_type: the schema shows what a campaign file may hold, not the normalized value.
StrList = Annotated[tuple[str, ...], BeforeValidator(_one_or_many, json_schema_input_type=str | list[str])]
CommaList = Annotated[tuple[str, ...], BeforeValidator(_comma_list, json_schema_input_type=str | list[str])]
_PositiveSeconds = Annotated[float, Field(gt=0)]
_DurationText = Annotated[str, Field(pattern=_DURATION.pattern)]
Seconds = Annotated[
    _PositiveSeconds, BeforeValidator(_duration, json_schema_input_type=_PositiveSeconds | _DurationText)
]
EnvValue = Annotated[str, BeforeValidator(_env_value, json_schema_input_type=str | int | float)]
EnvMap = dict[Annotated[str, Field(pattern=ENV_NAME_PATTERN)], EnvValue]
_Device = Annotated[int, Field(ge=0)]
Devices = Annotated[
    tuple[_Device, ...], BeforeValidator(_comma_list, json_schema_input_type=_Device | str | list[_Device])
]


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TargetOptions(Frozen):
    """Everything a target can set; `defaults:` holds the same keys for all targets.

    None means "not set here": a target inherits the campaign default, and an option set nowhere is
    left to ncu's own default (it is not passed).
    """

    # What to collect
    section_set: str | None = Field(None, alias="set", description="--set: section set (basic, full, ...)")
    sections: StrList | None = Field(None, description="--section, repeated: section identifiers or regex:")
    metrics: CommaList | None = Field(None, description="--metrics: metric names (joined with commas)")
    page: Literal["details", "raw", "source", "session"] | None = Field(None, description="--page")

    # NVTX selection: expressions use ncu's grammar verbatim; --nvtx is added for you.
    nvtx: bool | None = Field(None, description="--nvtx (added automatically with nvtx_include/exclude)")
    nvtx_include: StrList | None = Field(None, description="--nvtx-include, repeated (push/pop 'A/')")
    nvtx_exclude: StrList | None = Field(None, description="--nvtx-exclude, repeated")
    nvtx_push_pop_scope: Literal["thread", "process"] | None = Field(None, description="--nvtx-push-pop-scope")
    range_filter: str | None = Field(
        None,
        pattern=RANGE_FILTER_PATTERN,
        description="--range-filter [yes|no]:<start/stop instances>:<NVTX instances>, e.g. '::8', '::(4|8)'",
    )

    # Profiler start/stop API
    profile_from_start: bool | None = Field(None, description="--profile-from-start (off: start at cudaProfilerStart)")
    disable_profiler_start_stop: bool | None = Field(None, description="--disable-profiler-start-stop")

    # Kernel selection
    kernel_name: str | None = Field(None, min_length=1, description="--kernel-name: exact name or regex:<expr>")
    kernel_name_base: Literal["function", "demangled", "mangled"] | None = Field(None, description="--kernel-name-base")
    kernel_id: str | None = Field(None, min_length=1, description="--kernel-id ctx:stream:[regex:]name:invocation")
    launch_skip: int | None = Field(None, ge=0, description="--launch-skip: matching launches to skip")
    launch_skip_before_match: int | None = Field(None, ge=0, description="--launch-skip-before-match")
    launch_count: int | None = Field(None, ge=1, description="--launch-count: results to collect")
    filter_mode: Literal["global", "per-gpu", "per-launch-config"] | None = Field(None, description="--filter-mode")
    kill: bool | None = Field(
        None, description="--kill: stop the application once launch_count is reached (default: yes with launch_count)"
    )

    # CPU call-stack selection: --call-stack-type is added for each stack type a filter uses.
    call_stack_type: tuple[Literal["native", "python"], ...] | None = Field(None, description="--call-stack-type")
    python_include: StrList | None = Field(None, description="--python-include, repeated ('file.py@func')")
    python_exclude: StrList | None = Field(None, description="--python-exclude, repeated")
    native_include: StrList | None = Field(None, description="--native-include, repeated")
    native_exclude: StrList | None = Field(None, description="--native-exclude, repeated")

    # Processes, devices, graphs, replay, reproducibility
    target_processes: Literal["all", "application-only"] | None = Field(None, description="--target-processes")
    target_processes_filter: CommaList | None = Field(None, description="--target-processes-filter entries")
    devices: Devices | None = Field(None, description="--devices: GPU indices to profile")
    graph_profiling: Literal["node", "graph"] | None = Field(None, description="--graph-profiling")
    replay_mode: Literal["kernel", "application", "range", "app-range"] | None = Field(
        None, description="--replay-mode"
    )
    app_replay_mode: Literal["strict", "balanced", "relaxed"] | None = Field(None, description="--app-replay-mode")
    app_replay_match: Literal["name", "grid", "all"] | None = Field(None, description="--app-replay-match")
    cache_control: Literal["all", "none"] | None = Field(None, description="--cache-control")
    clock_control: Literal["base", "none", "boost", "force-boost"] | None = Field(None, description="--clock-control")

    extra_args: StrList | None = Field(
        None, description="ncu options the schema does not model, checked against ncu's option list"
    )

    # The workload
    args: StrList | None = Field(None, description="arguments appended to the application command")
    env: EnvMap | None = Field(None, description="environment additions (merged over application.env)")

    # Running
    timeout: Seconds | None = Field(None, description="seconds (or '10m') before the attempt is stopped")
    retries: int | None = Field(None, ge=0, le=20, description="extra attempts after a transient failure")
    retry_delay: float | None = Field(None, ge=0, description="seconds before the first retry (doubles each time)")
    lint_ignore: StrList | None = Field(None, description="warning codes to silence, e.g. [NCU001]")
    stop_grace: Seconds | None = Field(
        None, description="seconds ncu gets after SIGINT to write its report, then again after SIGTERM (default 20)"
    )

    @field_validator("metrics", "target_processes_filter")
    @classmethod
    def _no_commas(cls, values: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for value in values or ():
            if "," in value:
                raise ValueError(
                    f"{value!r} contains a comma, but ncu splits this option on commas; "
                    "a regex here cannot contain commas"
                )
        return values

    @field_validator("target_processes_filter")
    @classmethod
    def _process_filter_form(cls, values: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for value in values or ():
            prefix, _, rest = value.partition(":")
            if rest == "" and prefix in ("regex", "exclude", "exclude-tree"):
                raise ValueError(f"{value!r}: nothing after '{prefix}:'")
        return values

    @field_validator("extra_args")
    @classmethod
    def _extra_args(cls, values: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if values:
            check_extra_args(values)
        return values

    @field_validator("kernel_name", "kernel_id")
    @classmethod
    def _regex_not_empty(cls, value: str | None) -> str | None:
        if value is None:
            return value
        _, body = split_regex(value)
        if not body:
            raise ValueError("'regex:' needs an expression after it")
        if len(body) >= 2 and body[0] == body[-1] and body[0] in "\"'":
            # Copied from a shell command: in YAML the quotes would reach ncu and match nothing.
            unquoted = value[: len(value) - len(body)] + body[1:-1]
            raise ValueError(f"the quotes are part of the value here (YAML is not a shell); write {unquoted}")
        return value


def _command(value: Any) -> Any:
    if isinstance(value, list | tuple) and not value:
        raise ValueError("the command is empty")
    if isinstance(value, str) and not value.strip():
        raise ValueError("the command is empty")
    return value


Command = Annotated[tuple[str, ...] | str, BeforeValidator(_command, json_schema_input_type=list[str] | str)]


class Application(Frozen):
    """The program ncu launches."""

    command: Command = Field(
        description="argv list, or a string split like a shell would (shlex); run through a shell only with shell: true"
    )
    shell: bool = Field(False, description="run the command string with /bin/sh -c (off by default)")
    cwd: str | None = Field(None, description="working directory; relative to the campaign file")
    env: EnvMap = Field(default_factory=dict, description="environment additions for every target")


class Target(TargetOptions):
    """One thing to profile. With `matrix`, one entry expands into one invocation per combination."""

    name: str = Field(
        pattern=TEMPLATE_NAME_PATTERN,
        description="unique name; also the report and log file name; may use {key} placeholders of matrix",
    )
    description: str | None = None
    command: Command | None = Field(None, description="replaces application.command for this target")
    matrix: dict[str, Annotated[list[Any], Field(min_length=1)]] | None = Field(
        None, description="option -> list of values; one invocation per combination (e.g. range_filter: ['::4', '::8'])"
    )


class Campaign(Frozen):
    """A campaign file."""

    version: Literal[1] = Field(1, description="format version of this file")
    name: str | None = Field(None, pattern=NAME_PATTERN, description="campaign name (default: the file name)")
    description: str | None = None
    ncu: str | None = Field(None, description="ncu executable (default: ncu on PATH)")
    runs_dir: str | None = Field(None, description="where run directories go (default: ./runs)")
    application: Application
    defaults: TargetOptions = Field(default_factory=TargetOptions, description="options every target inherits")
    targets: tuple[Target, ...] = Field(min_length=1, description="what to profile")


# The campaign key of every option (`set` is the one whose field has another name: section_set).
_FIELD_OF_KEY: dict[str, str] = {(info.alias or name): name for name, info in TargetOptions.model_fields.items()}
OPTION_KEYS: tuple[str, ...] = tuple(_FIELD_OF_KEY)


def field_name(key: str) -> str:
    """The TargetOptions field that holds a campaign key ('set' -> 'section_set')."""
    return _FIELD_OF_KEY.get(key, key)


def option_value(options: TargetOptions, key: str) -> Any:
    """The value of a campaign key in `options` (None when not set)."""
    return getattr(options, field_name(key))


def keys_set(options: TargetOptions) -> set[str]:
    """The campaign keys that `options` sets explicitly."""
    fields = TargetOptions.model_fields
    return {(fields[name].alias or name) for name in options.model_fields_set if name in fields}
