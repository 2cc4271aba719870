"""manifest.json: what a run did, versioned, rewritten atomically after every target.

`schemas/manifest.schema.json` is generated from `Manifest`; readers should check
`manifest_version` before anything else.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ncucampaign.classify import Status

MANIFEST_VERSION = 1


class Record(BaseModel):
    model_config = {"extra": "forbid"}


class ToolInfo(Record):
    name: str = "ncucampaign"
    version: str


class CampaignInfo(Record):
    name: str
    source: str | None = Field(description="the campaign file, made absolute; None for a bare command")
    copy_path: str = Field(description="the copy inside the run directory")
    sha256: str


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
    ended_at: str
    seconds: float
    exit_code: int | None = Field(description="ncu's exit code; negative: killed by that signal")
    status: Status
    message: str
    signals_sent: list[str] = Field(default_factory=list)
    leftovers_killed: int = 0
    report: str | None = Field(None, description="this attempt's report, when it wrote one and it was kept")


class ReportInfo(Record):
    path: str
    bytes: int
    sha256: str
    results: int | None = Field(description="results in the report; None when it could not be counted")
    results_from: Literal["report", "console"] | None


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
    status: Status
    message: str = ""
    seconds: float = 0.0
    attempts: list[AttemptRecord] = Field(default_factory=list)
    report: ReportInfo | None = None
    diagnosis: list[str] = Field(default_factory=list, description="why nothing was profiled, or what ncu refused")
    log: str


class Manifest(Record):
    manifest_version: Literal[1] = MANIFEST_VERSION
    tool: ToolInfo
    run_id: str
    state: Literal["running", "finished", "interrupted"]
    started_at: str
    ended_at: str | None = None
    command_line: list[str]
    campaign: CampaignInfo
    host: HostInfo
    ncu: NcuInfo
    gpus: list[GpuInfo] | None = Field(description="from nvidia-smi; None when it is not available")
    workload_git: GitInfo | None = Field(description="the application's working directory, when it is in git")
    targets: list[TargetRecord]

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for target in self.targets:
            counts[target.status.value] = counts.get(target.status.value, 0) + 1
        return counts
