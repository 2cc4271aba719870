"""What `run` is asked to do, as one frozen value: built once from the command line or by `ab` per run, handed to
every step, kept in the manifest for `run --resume` to read back. Nothing downstream reads an argv."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from ncucampaign.execute.rundir.result_records import Record

HERE = "here"  # the backend of a run on this machine (backends/local.py)


class FrozenRecord(Record):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BackendRequest(FrozenRecord):
    """Where the run goes (a name of backends/systems.py's table) and what only that backend
    reads: its options as given on the command line, by flag; `wait`: follow a submission until it ends."""

    name: str = HERE
    wait: bool = False
    options: dict[str, tuple[str, ...]] = Field(default_factory=dict, description="flag -> values, as given")

    def values(self, flag: str) -> tuple[str, ...]:
        return self.options.get(flag, ())

    def value(self, flag: str) -> str | None:
        given = self.values(flag)
        return given[-1] if given else None


class RunRequest(FrozenRecord):
    file: str | None = None
    only: tuple[str, ...] = ()
    out: str | None = None
    dry_run: bool = False
    samples: int | None = None
    ncu_flag: str | None = Field(None, description="--ncu")
    show_output: bool = False
    resume: str | None = Field(None, description="a run directory, or latest")
    rerun_failed: bool = False
    gpus: str | None = None
    no_share: bool = False
    weigh: bool = False
    jobs_per_gpu: int = 1
    backend: BackendRequest = Field(default_factory=BackendRequest)

    def but(self, **changes: Any) -> RunRequest:
        return self.model_copy(update=changes)

    def kept_by(self, recorded: RunRequest) -> RunRequest:
        """This request, for a resume of the run `recorded` asked for: what that run was started with
        that a resume keeps (--no-share, --weigh; --samples unless given now), flags given now added."""
        samples = self.samples if self.samples is not None else recorded.samples
        return self.but(
            no_share=self.no_share or recorded.no_share, weigh=self.weigh or recorded.weigh, samples=samples
        )
