"""Which GPU an invocation runs on, and which invocations a resumed run still has to run. Pure.

With `run --gpus 0,1`, every invocation is pinned to one GPU: CUDA_VISIBLE_DEVICES names it and
ncu's `--devices 0` selects it inside that view. A target that names devices (its own
CUDA_VISIBLE_DEVICES, or `devices:`) runs on those and nowhere else.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import replace
from enum import StrEnum

from ncucampaign.classify import Status
from ncucampaign.manifest import TargetRecord
from ncucampaign.plan import Invocation

VISIBLE = "CUDA_VISIBLE_DEVICES"


def parse_gpus(text: str, available: Sequence[str] | None) -> tuple[str, ...]:
    """'0,1' or 'all' -> GPU ids as CUDA_VISIBLE_DEVICES takes them (indices or UUIDs)."""
    if text.strip() == "all":
        if not available:
            raise ValueError("--gpus all: no GPU found (nvidia-smi lists none)")
        return tuple(available)
    gpus = tuple(part.strip() for part in text.split(",") if part.strip())
    if not gpus:
        raise ValueError("--gpus needs a list such as 0,1 or 'all'")
    if len(set(gpus)) != len(gpus):
        raise ValueError(f"--gpus {text}: a GPU is listed twice")
    return gpus


def named_gpus(invocation: Invocation) -> tuple[str, ...] | None:
    """The GPUs an invocation insists on, or None when any one GPU will do."""
    env = dict(invocation.env)
    if env.get(VISIBLE):
        return tuple(part.strip() for part in env[VISIBLE].split(",") if part.strip())
    if invocation.options.devices:
        return tuple(str(device) for device in invocation.options.devices)
    return None


def pin(invocation: Invocation, gpus: tuple[str, ...]) -> Invocation:
    """Run on exactly `gpus`: CUDA_VISIBLE_DEVICES names them, ncu's --devices counts inside that view."""
    env = dict(invocation.env)
    if env.get(VISIBLE):  # the target chose its own view; its devices: are already relative to it
        return invocation
    env[VISIBLE] = ",".join(gpus)
    options = invocation.options.model_copy(update={"devices": tuple(range(len(gpus)))})
    return replace(invocation, env=tuple(sorted(env.items())), options=options)


def fingerprint(argv: Sequence[str], invocation: Invocation) -> str:
    """What makes a result reusable: the exact command, environment additions and working directory."""
    data = {"argv": list(argv), "env": dict(invocation.env), "cwd": str(invocation.cwd)}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


class Decision(StrEnum):
    RUN = "run"
    SKIP = "skip"  # done before and unchanged, or not asked for


def resume_decision(record: TargetRecord | None, new_fingerprint: str, rerun_failed: bool) -> Decision:
    if record is None:
        return Decision.SKIP if rerun_failed else Decision.RUN  # --rerun-failed runs failures only
    if record.status == Status.OK and (rerun_failed or record.fingerprint == new_fingerprint):
        return Decision.SKIP
    if rerun_failed and record.status == Status.PENDING:
        return Decision.SKIP
    return Decision.RUN
