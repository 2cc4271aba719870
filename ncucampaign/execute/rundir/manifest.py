"""manifest.json: what a run did, versioned, rewritten atomically (its changes in between: journal.py). Its schema
(`schemas/manifest.schema.json`) is generated from `Manifest`; readers check `manifest_version` first."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from ncucampaign.execute.rundir.request import RunRequest
from ncucampaign.execute.rundir.result_records import Record, ResultRecord
from ncucampaign.execute.rundir.status import SharedRunKind, Status
from ncucampaign.spec.schema import json_schema

MANIFEST_VERSION: Literal[1] = 1


def _in_the_run(path: str) -> str:
    """A path the manifest names inside its run directory: relative, never up and out of it (`..`), no control
    character. A reader opens only these (a forged `../../etc/passwd` or `/etc/passwd` is a damaged manifest)."""
    parts = PurePosixPath(path).parts  # "" names nothing (a record without a log)
    if path.startswith("/") or ".." in parts or "\\" in path or not path.isprintable():
        raise ValueError("not a path inside the run directory")
    return path


InRun = Annotated[str, AfterValidator(_in_the_run)]


class ToolInfo(Record):
    name: str = "ncucampaign"
    version: str


class CampaignInfo(Record):
    name: str
    source: str | None = Field(description="the campaign file, made absolute; None for a bare command")
    copy_path: InRun = Field(description="the copy inside the run directory")
    sha256: str
    seal: str = Field(
        "",
        description="an HMAC of source and sha256 under the user's key (execute/rundir/seal.py): a resume without "
        "the FILE named refuses a manifest whose source another wrote or moved",
    )


class HostInfo(Record):
    hostname: str
    platform: str
    python: str


class NcuInfo(Record):
    path: str
    version: str | None


class GpuInfo(Record):
    index: int
    name: str
    uuid: str
    driver_version: str


class GitInfo(Record):
    root: str
    commit: str
    dirty: bool


class AttemptRecord(Record):
    number: int
    started_at: str
    ended_at: str | None = Field(None, description="None while it runs, or when the runner died during it")
    seconds: float = 0.0
    process_group: int | None = Field(None, description="ncu's process group, to clean up after a runner crash")
    exit_code: int | None = Field(None, description="ncu's exit code; negative: killed by that signal")
    status: Status
    message: str = ""
    signals_sent: list[str] = Field(default_factory=list)
    leftovers_killed: int = 0
    report: InRun | None = Field(None, description="this attempt's report, when it wrote one and it was kept")


class ReportInfo(Record):
    path: InRun
    bytes: int
    sha256: str
    results: int | None = Field(description="results in the report; None when it could not be counted")
    results_from: Literal["report", "console"] | None
    ids: list[int] | None = Field(
        None,
        description="a target's results in a shared run's report (path), by place; its own report is written on "
        "demand (ncucampaign export). None: the report is the target's own",
    )


class Obtained(Record):
    """How a target's results were obtained: its own run, split out of a shared run, or (for a target that would
    profile nothing) decided on the discovery trace, or on a miss kept beside it, without a run of its own."""

    how: Literal["alone", "shared", "trace"]
    reason: str = Field("", description="why it ran alone, or why its split was not used (kernels by function name)")
    detail: str = Field(
        "", description="the reason with every kernel named by its symbol (mangled), where it names any"
    )
    shared_run: str | None = Field(
        None, description="the shared run (shared_runs[].name) it came from or fell back from"
    )
    split_command: str | None = Field(None, description="the ncu --import command that wrote its report")
    split_argv: list[str] = Field(
        default_factory=list, description="the same as words (ncucampaign export runs it for a target read out)"
    )
    sections_asked: list[str] = Field(default_factory=list)
    sections_collected: list[str] = Field(default_factory=list, description="what the shared run collected")
    verification: str | None = Field(None, description="how the split was checked against the trace or the targets")
    miss_run: str | None = Field(
        None, description="closed on a miss kept beside the trace: the run whose own run of it profiled nothing"
    )


BACKEND_OF_OLDER = ""  # records written before a second batch system existed name none: the first (backends/)
BACKEND_SAYS = "the batch system, as backends/systems.py names it ('': the first, in records that name none)"


class TaskPlacement(Record):
    """Where a batch task ran a target: a Slurm array task (run --slurm), or a pod of a Kubernetes
    Indexed Job (run --k8s: array_job_id is the Job's namespace/name, array_task_id its index)."""

    backend: str = Field(BACKEND_OF_OLDER, description=BACKEND_SAYS)
    job_id: str
    array_job_id: str
    array_task_id: int
    node: str
    cuda_visible_devices: str | None = Field(description="as Slurm set it for the task (never overridden)")
    gpu_uuids: list[str] = Field(default_factory=list, description="the GPUs it names, from nvidia-smi on the node")
    record: str = Field(description="the task's own record file, merged into this manifest by collect")


class Submission(Record):
    """One submission to a batch system: a Slurm job array (--slurm), a Kubernetes Indexed Job (--k8s)."""

    number: int
    backend: str = Field(BACKEND_OF_OLDER, description=BACKEND_SAYS)
    job_id: str | None = Field(description="from sbatch, or the Job's namespace/name; None: not submitted")
    submitted_at: str
    script: str
    tasks: list[list[str]] = Field(
        description="per array index, the targets it claims at its start (none: it runs a trace pool's unions)"
    )
    after: list[str] = Field(
        default_factory=list, description="the tasks (<id>_<index>) it starts after: a trace pool's second stage"
    )


class TargetRecord(Record):
    name: str
    target: str = Field(description="the target entry this invocation came from")
    matrix: dict[str, Any] = Field(default_factory=dict)
    argv: list[str]
    shell_command: str
    env: dict[str, str]
    cwd: str
    timeout_s: float
    retries: int
    expected_results: int | None
    fingerprint: str = Field("", description="sha256 of argv, environment and cwd; resume keeps ok results that match")
    gpus: list[str] | None = Field(None, description="CUDA_VISIBLE_DEVICES it was pinned to (run --gpus)")
    clock_control: str | None = Field(
        None, description="the --clock-control it ran with (base where the campaign sets none; None: older runs)"
    )
    config_file: str | None = Field(
        None, description="the ncu config file it read: off (none, where the campaign names none), on, or its path"
    )
    rename_kernels: str | None = Field(
        None, description="ncu's kernel renaming: off (where the campaign asks for none), on, or the renames file"
    )
    status: Status
    message: str = ""
    seconds: float = 0.0
    attempts: list[AttemptRecord] = Field(default_factory=list)
    report: ReportInfo | None = None
    diagnosis: list[str] = Field(default_factory=list, description="why nothing was profiled, or what ncu refused")
    results: list[ResultRecord] = Field(default_factory=list, description="read from the report after the run")
    log: InRun
    obtained: Obtained | None = Field(None, description="None: its own run (runs before shared runs existed)")
    placement: TaskPlacement | None = Field(None, description="the batch task that ran it (run --slurm, --k8s)")
    gpu_time_share: float | None = Field(None, description="share (0-1) of the app's timed GPU time its kernels hold")
    launch_s: float | None = Field(None, description="seconds a launch of what it collects was priced at")
    launch_count: int | None = Field(None, description="its --launch-count (None: every matching launch)")
    metrics: list[str] = Field(default_factory=list, description="the metrics its campaign names (--metrics), in order")
    # Required, so a record written before these fields is refused as it is and read through rundir/older.py
    collects_sections: bool = Field(description="False: metrics alone, so ncu ran none of its rules")


class TraceInfo(Record):
    report: str = Field(description="the discovery trace (in the trace cache)")
    key: str = Field(description="cache key: command, filters, environment, workload commit, ncu version, GPU")
    launches: int = Field(description="its --launch-count: it holds at most this many launches")
    reused: bool = Field(description="True: taken from the cache, not run now")
    seconds: float | None = Field(None, description="how long the trace took when it ran (it calibrates costs)")
    tracer: str = Field("ncu", description="the tracer that took it (execute/trace/tracers.py): ncu, or nsys")
    launch_s: float | None = Field(None, description="seconds a traced launch adds to an application start")
    declined: str | None = Field(None, description="why a tracer this machine has could not take this trace")


class SharedRunRecord(TargetRecord):
    """One application run profiling the union of several targets; its members point here."""

    members: list[str]
    window: Literal["targets", "trace"] = Field(description="where the union's launch window came from")
    trace: TraceInfo | None = None
    kind: SharedRunKind = Field(
        description="union: profiles its members' launches; trace: a discovery trace; timing: the timing pass"
    )
    tracer: str | None = Field(None, description="the tracer that took a discovery trace: ncu, or nsys")


class KernelTime(Record):
    kernel: str = Field(description="mangled name, as results' `mangled` (templated kernels kept apart)")
    name: str = Field("", description="as ncu's console demangles it")
    launches: int
    ns: float = Field(description="GPU time of its launches, summed")


class GpuTime(Record):
    """The application's GPU time by kernel, from a timing pass (`weigh: true`, `run --weigh`): one
    run of the command under ncu with one metric, every launch, no filter."""

    run: str = Field(description="the timing pass (shared_runs[].name), or the cached report it reused")
    launches: int = Field(description="launches timed")
    complete: bool = Field(description="False: the pass stopped at its launch limit (shares of the first launches)")
    total_ns: float
    kernels: list[KernelTime] = Field(default_factory=list, description="by GPU time, largest first")


class Manifest(Record):
    manifest_version: Literal[1] = MANIFEST_VERSION
    tool: ToolInfo
    run_id: str
    state: Literal["running", "finished", "interrupted", "submitted"]
    started_at: str
    ended_at: str | None = None
    command_line: list[str]
    campaign: CampaignInfo
    host: HostInfo
    ncu: NcuInfo
    gpus: list[GpuInfo] | None = Field(description="from nvidia-smi; None when it is not available")
    workload_git: GitInfo | None = Field(description="the application's working directory, when it is in git")
    targets: list[TargetRecord]
    resumed: list[str] = Field(default_factory=list, description="when the run was resumed (run --resume)")
    resumed_with: list[RunRequest] = Field(
        default_factory=list, description="what each resume was asked (`request` stays what the run began with)"
    )
    shared_runs: list[SharedRunRecord] = Field(
        default_factory=list, description="application runs shared by several targets (their members say which)"
    )
    submissions: list[Submission] = Field(
        default_factory=list, description="submissions to a batch system (run --slurm, --k8s), oldest first"
    )
    gpu_time: GpuTime | None = Field(None, description="the application's GPU time by kernel (None: not timed)")
    gpu_time_note: str = Field("", description="why there is no gpu_time when the run asked for one")
    request: RunRequest | None = Field(None, description="what run was asked (None: runs recorded before it was kept)")
    own_seconds: dict[str, float] = Field(
        default_factory=dict,
        description="ncucampaign's own seconds by phase (start-up, planning, trace listing, splits, verification, "
        "records, reports, other), the waits on ncu left out; of the run's latest session (a resume's)",
    )

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for target in self.targets:
            counts[target.status.value] = counts.get(target.status.value, 0) + 1
        return counts


def manifest_schema() -> dict[str, Any]:
    return json_schema(Manifest, "manifest.schema.json", "ncucampaign run manifest")
