"""What the trace cache keeps beside a trace (<runs root>/.cache/traces/<key>.json), as one model: how long the trace
took (and where a timeout cut it), the stamp and digest it was kept with, the last union runs on it and the cheapest
groups measured. A cache: a value that does not read as its field is no value (None, or nothing kept), never a
failed run."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
)

Seconds = Annotated[float, Field(ge=0, lt=1e6)]
_RUN = TypeAdapter(tuple[Seconds, Seconds])


class Seal(BaseModel):
    stamp: list[int]
    sha256: str


class KeptGroups(BaseModel):
    groups: list[list[str]] = Field(min_length=1)
    measured_s: float = Field(gt=0, lt=1e7)


class TraceSide(BaseModel):
    model_config = ConfigDict(extra="ignore")  # what another version keeps beside it is its own

    seconds: float | None = Field(None, gt=0, lt=1e6, description="how long the trace took when it ran")
    kept: Seal | None = Field(None, description="the trace file's stamp and digest when it was kept")
    runs: list[tuple[Seconds, Seconds]] = Field(
        default_factory=list, description="the last union runs on it: their seconds and priced replay"
    )
    partition: KeptGroups | None = Field(None, description="the cheapest groups an earlier run measured")
    cut_at: int | None = Field(
        None, gt=0, description="stopped by its timeout holding this many launches: what came later is unknown"
    )

    @field_validator("seconds", "kept", "partition", "cut_at", mode="wrap")
    @classmethod
    def _or_none(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return None

    @field_validator("runs", mode="before")
    @classmethod
    def _readable_runs(cls, value: Any) -> Any:
        """The runs that read as runs (one damaged entry does not lose the others)."""
        if not isinstance(value, list):
            return []
        kept = []
        for run in value:
            try:
                kept.append(_RUN.validate_python(run))
            except ValidationError:
                continue
        return kept
