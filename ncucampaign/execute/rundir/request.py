"""What `run` is asked to do, as one frozen value: built once from the command line or by `ab` per run, handed to
every step, kept in the manifest for `run --resume` to read back. Nothing downstream reads an argv. Read strictly:
a recorded `samples: true` is no count, `no_share: "yes"` no flag, and counts stay in the range the flags take."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, StrictBool, StrictInt, StrictStr

from ncucampaign.execute.rundir.result_records import Record
from ncucampaign.spec.model import MAX_SAMPLES

HERE = "here"  # the backend of a run on this machine (backends/local.py)


class FrozenRecord(Record):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BackendRequest(FrozenRecord):
    """Where the run goes (a name of backends/systems.py's table) and what only that backend
    reads: its options as given on the command line, by flag; `wait`: follow a submission until it ends."""

    name: StrictStr = HERE
    wait: StrictBool = False
    options: dict[StrictStr, tuple[StrictStr, ...]] = Field(
        default_factory=dict, description="flag -> values, as given"
    )

    def values(self, flag: str) -> tuple[str, ...]:
        return self.options.get(flag, ())

    def value(self, flag: str) -> str | None:
        given = self.values(flag)
        return given[-1] if given else None


class RunRequest(FrozenRecord):
    file: StrictStr | None = None
    only: tuple[StrictStr, ...] = ()
    out: StrictStr | None = None
    dry_run: StrictBool = False
    samples: StrictInt | None = Field(None, ge=1, le=MAX_SAMPLES)
    ncu_flag: StrictStr | None = Field(None, description="--ncu")
    show_output: StrictBool = False
    resume: StrictStr | None = Field(None, description="a run directory, or latest")
    rerun_failed: StrictBool = False
    gpus: StrictStr | None = None
    no_share: StrictBool = False
    weigh: StrictBool = False
    jobs_per_gpu: StrictInt = Field(1, ge=1)
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
