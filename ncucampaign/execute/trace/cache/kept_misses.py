"""Misses kept beside a discovery trace (<runs root>/.cache/traces/<key>.misses.json): members whose launches lay
beyond what the trace held, and whose own run then profiled nothing. Such a run took the whole application to its
end with nothing matched, so on the same trace key (the same command, environment, workload, ncu and GPU:
cache.py) the same options match nothing again; a later run on the kept trace closes the member on it instead of
paying its start again (moe_train, llama_serve: docs/shared-runs.md). Kept per member's options whole (any change
is another key) and forgotten with the trace when a new one is made. A cache: what does not read as a miss is none."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError, field_validator

from ncucampaign.plan.expand import Invocation

KEPT_MISSES = 200  # per trace, the latest: a campaign of thousands of typos pays starts beyond them
_LINE = 300  # characters kept of a diagnosis line
_LINES = 4
MAX_MISSES_FILE = 4 << 20  # the bounds above, every character escaped six-fold in JSON, stay within it

Line = Annotated[str, StringConstraints(max_length=_LINE)]


class KeptMiss(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    run: Annotated[str, StringConstraints(min_length=1, max_length=200)] = Field(
        description="the run whose own run of it profiled nothing (its run id)"
    )
    diagnosis: list[Line] = Field(default_factory=list, max_length=_LINES, description="what that run hinted")


_MISS = TypeAdapter(KeptMiss)


class KeptMisses(BaseModel):
    model_config = ConfigDict(extra="ignore")

    misses: dict[str, KeptMiss] = Field(default_factory=dict, description="member key (miss_key) -> the miss")

    @field_validator("misses", mode="before")
    @classmethod
    def _readable(cls, value: Any) -> Any:
        """The entries that read as misses (one damaged entry does not lose the others)."""
        if not isinstance(value, dict):
            return {}
        kept = {}
        for key, miss in list(value.items())[-KEPT_MISSES:]:
            try:
                kept[str(key)] = _MISS.validate_python(miss)
            except ValidationError:
                continue
        return kept


def miss_key(member: Invocation) -> str:
    """What a member's own run is, less where its report goes: its options, command, environment and folder."""
    data = {
        "options": member.options.model_dump(mode="json"),
        "argv": list(member.app_argv),
        "env": sorted(member.env),
        "cwd": str(member.cwd),
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def kept_miss(run: str, diagnosis: list[str]) -> KeptMiss:
    return KeptMiss(run=run[:200], diagnosis=[line[:_LINE] for line in diagnosis[:_LINES]])
