"""A reference file (refs/<GPU model>.yaml) as models: read once, validated in one pass, written from the same
models. A damaged or hand-edited file is named by the key that is wrong (`targets.t.metrics.m.samples[0]: 'True'
is not a finite number`), never a traceback; numbers are finite, bools are not numbers (YAML reads 1e999 as inf,
10**400 as an int no float holds, and `yes` as true)."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
)
from pydantic_core import ErrorDetails

REFERENCE_VERSION: Literal[1] = 1


def finite_number(value: object) -> bool:
    """An int or float (never a bool) that is finite."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _finite(value: object) -> object:
    if not finite_number(value):
        raise ValueError(f"{str(value)[:40]!r} is not a finite number")
    return value


def _not_negative(value: float | int | None) -> float | int | None:
    if value is not None and value < 0:
        raise ValueError(f"{value} is negative")
    return value


Number = Annotated[float | int, BeforeValidator(_finite)]


class ReferenceMetric(BaseModel):
    """One metric of a target: its samples, their median, and a tolerance, or `exact` (a count: any change)."""

    model_config = ConfigDict(extra="ignore")

    unit: StrictStr = ""
    samples: list[Number] = Field(min_length=1)
    median: Number | None = None
    tolerance: Annotated[Number | None, AfterValidator(_not_negative)] = None
    exact: StrictBool | None = None


class ReferenceLaunch(BaseModel):
    """The launch its samples are of: kernel, symbol, grid, block and NVTX stack (compare matches by them)."""

    model_config = ConfigDict(extra="ignore")

    kernel: StrictStr
    symbol: StrictStr = ""
    grid: list[int] | None = None
    block: list[int] | None = None
    nvtx: list[str] = Field(default_factory=list)


class ReferenceTarget(BaseModel):
    model_config = ConfigDict(extra="ignore")

    launch: ReferenceLaunch
    metrics: dict[str, ReferenceMetric]
    gate: Any = None  # kept from the file replaced: the people's, not ours
    xfail: Any = None


class ReferenceHeader(BaseModel):
    """What the reference was made with: compare refuses a run made otherwise (not_comparable)."""

    model_config = ConfigDict(extra="ignore")

    campaign: str | None = None
    campaign_sha256: str | None = None
    ncu: str | None = None
    driver: str | None = None
    clock_control: str | None = None
    runs: list[str] = Field(default_factory=list)
    workload_commit: str | None = None


class Reference(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reference: Literal[1] = REFERENCE_VERSION
    gpu: str
    header: ReferenceHeader
    targets: dict[str, ReferenceTarget]

    def file_data(self) -> dict[str, Any]:
        """What the YAML file holds: the header whole, each target without what it does not have."""
        return {
            "reference": self.reference,
            "gpu": self.gpu,
            "header": self.header.model_dump(),
            "targets": {name: target.model_dump(exclude_none=True) for name, target in self.targets.items()},
        }


def problem(error: ErrorDetails) -> str:
    """One validation error as `key.path: why`, in the words of the file's format."""
    parts: list[str] = []
    for place in error["loc"]:
        if isinstance(place, int):
            parts[-1:] = [f"{parts[-1] if parts else ''}[{place}]"]
        else:
            parts.append(str(place))
    where, last = ".".join(parts), str(error["loc"][-1]) if error["loc"] else ""
    if error["type"] == "value_error":
        return f"{where}: {str(error['msg']).removeprefix('Value error, ')}"
    if last == "samples":
        return f"{where}: not a list of numbers"
    if last == "exact":
        return f"{where}: {str(error.get('input'))[:40]!r} is not true or false"
    if last == "unit":
        return f"{where}: not text"
    if error["type"] == "missing":
        return f"{where}: missing"
    return f"{where}: {error['msg']}" if where else "not a mapping"


def parsed_reference(data: object) -> Reference | str:
    """A whole reference file's data as its model, or what is wrong with it as `key.path: why`."""
    if not isinstance(data, dict) or data.get("reference") != REFERENCE_VERSION:
        return "not a reference file of this version (reference: 1, with targets)"
    if not isinstance(data.get("targets"), dict):
        return "not a reference file of this version (reference: 1, with targets)"
    try:
        return Reference.model_validate(data)
    except ValidationError as exc:
        return problem(exc.errors()[0])
