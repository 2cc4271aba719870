"""The campaign file format: pydantic models, the one source of `schemas/campaign.schema.json` (a test fails on
drift). Frozen; sequences are tuples. Cross-target checks need key paths and live in plan/expand.py."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from ncucampaign.spec.kubernetes import KubernetesSection
from ncucampaign.spec.ncu_catalog import check_extra_args
from ncucampaign.spec.ncu_grammar import split_regex
from ncucampaign.spec.roles import NCU_TEXT_FIELDS
from ncucampaign.spec.values import (
    CommaList,
    Command,
    Delay,
    Devices,
    EnvMap,
    PathText,
    Seconds,
    ShellWords,
    StrList,
    WholeNumber,
    check_not_shell_quoted,
    refuse_comma_string,
)

# A target name becomes a file name (reports/<name>.ncu-rep, logs/<name>.log) and part of ncu's -o
# argument, where '%' starts a macro: letters, digits, '_', '-', '.', not starting with '.' or '-'.
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$"
# Before matrix expansion a name may hold {key} placeholders.
TEMPLATE_NAME_PATTERN = r"^[A-Za-z0-9_{][A-Za-z0-9_.{}-]{0,99}$"
MAX_LAUNCHES = 2**63 - 1  # ncu counts launches in 64 bits; more is a typo (and a number too long to print)
MAX_SAMPLES = 1000  # compare's rank test decides with 5 a side; a thousand profiled launches is hours
MAX_PEERS = 4096  # ranks of one job that ncu instances coordinate
RANGE_FILTER_PATTERN = r"^(yes|no|on|off)?:[^:]*:[^:]*$"


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TargetOptions(Frozen):
    """Everything a target can set (`defaults:` holds the same keys). None is "not set here": inherited from the
    defaults, and an option set nowhere is left to ncu's own default (not passed)."""

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
    launch_skip: WholeNumber | None = Field(
        None, ge=0, le=MAX_LAUNCHES, description="--launch-skip: matching launches to skip"
    )
    launch_skip_before_match: WholeNumber | None = Field(
        None, ge=0, le=MAX_LAUNCHES, description="--launch-skip-before-match"
    )
    launch_count: WholeNumber | None = Field(
        None, ge=1, le=MAX_LAUNCHES, description="--launch-count: results to collect"
    )
    samples: WholeNumber | None = Field(
        None,
        ge=1,
        le=MAX_SAMPLES,
        description="results in one launch state for compare's verdicts: profiles this many matching launches "
        "from launch_skip on (as launch_count, which must then be 1 or unset); run --samples overrides it",
    )
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
    clock_control: Literal["base", "none", "boost", "force-boost"] | None = Field(
        None, description="--clock-control (unset: base, pinned; ncu 2026.1 changed its own default to boost)"
    )
    config_file: bool | PathText | None = Field(
        None,
        description="ncu's config file (config.ncu-cfg): unset or false, none is read (--config-file off), whatever "
        "lies in the working directory or ncu's config folder; true: ncu's own search; a path (relative to the "
        "campaign file): that file",
    )
    rename_kernels: bool | PathText | None = Field(
        None,
        description="ncu's kernel renaming: unset or false, off (--rename-kernels off: no stray "
        "ncu-kernel-renames.yaml renames kernels); true: ncu's own (simplified demangled names, and a renames "
        "file where ncu finds one); a path (relative to the campaign file): that renames file",
    )

    # Multi-process profiling: the ncu instances of a job coordinate, so that a collective (NCCL,
    # NVSHMEM) can be profiled with its peers (ncu 2026.1 and later; docs/ncu-behaviour.md, "Versions").
    communicator: Literal["none", "tcp", "shmem"] | None = Field(
        None, description="--communicator (ncu 2026.1+): tcp across process trees, shmem within one"
    )
    communicator_tcp_num_peers: WholeNumber | None = Field(
        None, ge=1, le=MAX_PEERS, description="--communicator-tcp-num-peers (ncu 2026.1+)"
    )
    communicator_tcp_port: WholeNumber | None = Field(
        None, ge=1, le=65535, description="--communicator-tcp-port (ncu 2026.1+)"
    )
    communicator_shmem_num_peers: WholeNumber | None = Field(
        None, ge=1, le=MAX_PEERS, description="--communicator-shmem-num-peers (ncu 2026.1+)"
    )
    lockstep_kernel_launch: bool | None = Field(
        None, description="--lockstep-kernel-launch (ncu 2026.1+): launch kernels in lockstep across the peers"
    )

    extra_args: ShellWords | None = Field(
        None,
        description="ncu options the schema does not model, checked against ncu's option list (a string is split "
        "like a shell would)",
    )

    # The workload
    args: ShellWords | None = Field(
        None, description="arguments appended to the application command (a string is split like a shell would)"
    )
    env: EnvMap | None = Field(None, description="environment additions (merged over application.env)")

    # Running
    timeout: Seconds | None = Field(None, description="seconds (or '10m') before the attempt is stopped")
    retries: WholeNumber | None = Field(None, ge=0, le=20, description="extra attempts after a transient failure")
    retry_delay: Delay | None = Field(
        None, description="seconds (or '30s', '1m') before the first retry (doubles each time); 0: at once"
    )
    lint_ignore: StrList | None = Field(None, description="warning codes to silence, e.g. [NCU001]")
    stop_grace: Seconds | None = Field(
        None, description="seconds ncu gets after SIGINT to write its report, then again after SIGTERM (default 20)"
    )
    stall_timeout: Delay | None = Field(
        None,
        description="seconds a collective kernel (NCCL, NVSHMEM) may be replayed without progress, or ncu may stay "
        "silent after warning that launching takes more time than expected, before the attempt is stopped as "
        "replay_hang (default 30; 0: never stop early)",
    )
    share: Literal["auto", "off"] | None = Field(
        None,
        description="auto (default): may share one application run with targets of identical run settings, "
        "split on import and verified; off: always its own run",
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

    @field_validator("sections", "lint_ignore")
    @classmethod
    def _names_not_lists(cls, values: tuple[str, ...] | None, info: ValidationInfo) -> tuple[str, ...] | None:
        what = "a section identifier" if info.field_name == "sections" else "a lint code"
        for value in values or ():
            if not value.startswith("regex:"):
                refuse_comma_string(value, what)
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
        if value is not None and not split_regex(value)[1]:
            raise ValueError("'regex:' needs an expression after it")
        return value

    @field_validator(*NCU_TEXT_FIELDS)
    @classmethod
    def _no_shell_quotes(cls, value: str | tuple[str, ...] | None) -> str | tuple[str, ...] | None:
        for item in (value,) if isinstance(value, str) else value or ():
            check_not_shell_quoted(item)
        return value


class Application(Frozen):
    """The program ncu launches."""

    command: Command = Field(
        description="argv list, or a string split like a shell would (shlex); run through a shell only with shell: true"
    )
    shell: bool = Field(False, description="run the command string with /bin/sh -c (off by default)")
    cwd: PathText | None = Field(None, description="working directory; relative to the campaign file")
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
    """A campaign file. Top-level keys that start with `x-` are the file's own (a home for YAML anchors, as in
    compose files): the loader sets them aside before validation."""

    model_config = ConfigDict(json_schema_extra={"patternProperties": {"^x-": {}}})

    version: Literal[1] = Field(1, description="format version of this file")
    name: str | None = Field(None, pattern=NAME_PATTERN, description="campaign name (default: the file name)")
    description: str | None = None
    ncu: PathText | None = Field(None, description="ncu executable (default: ncu on PATH)")
    runs_dir: PathText | None = Field(
        None, description="where run directories go, relative to this file (default: runs)"
    )
    application: Application
    weigh: bool = Field(
        False,
        description="after the targets, time the application's every launch once (one cheap ncu run, cached) so "
        "that findings are ranked by what they would gain the whole application",
    )
    defaults: TargetOptions = Field(default_factory=TargetOptions, description="options every target inherits")
    kubernetes: KubernetesSection | None = Field(None, description="where plan --k8s and run --k8s run it")
    targets: tuple[Target, ...] = Field(min_length=1, description="what to profile")
