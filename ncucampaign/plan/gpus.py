"""Which GPU an invocation runs on. Pure. `run --gpus 0,1` pins each invocation to one GPU (CUDA_VISIBLE_DEVICES;
`--devices 0` in that view); a target naming devices (CUDA_VISIBLE_DEVICES, `devices:`) runs only on those."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace

from ncucampaign.plan.expand import Invocation

VISIBLE = "CUDA_VISIBLE_DEVICES"


def split_visible(value: str | None) -> tuple[str, ...]:
    """A CUDA_VISIBLE_DEVICES value -> its entries ('0,1' -> ('0', '1')); unset or empty -> ()."""
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


def parse_gpus(text: str, machine: Sequence[str] | None, aliases: Collection[str] = ()) -> tuple[str, ...]:
    """'0,1' or 'all' -> GPU ids for CUDA_VISIBLE_DEVICES. `machine`: the GPUs this process may use (None:
    unknown, an explicit list is taken as given); `aliases`: their UUIDs. ValueError with the user's message."""
    if text.strip() == "all":
        if not machine:
            raise ValueError("--gpus all: no GPU found (nvidia-smi lists none)")
        return tuple(machine)
    gpus = split_visible(text)
    if not gpus:
        raise ValueError("--gpus needs a list such as 0,1 or 'all'")
    if len(set(gpus)) != len(gpus):
        raise ValueError(f"--gpus {text}: a GPU is listed twice")
    missing = [gpu for gpu in gpus if machine is not None and gpu not in machine and gpu not in aliases]
    if missing:
        have = ", ".join(machine or ()) or "none"
        raise ValueError(f"--gpus {text}: no GPU {', '.join(missing)} here (GPUs: {have})")
    return gpus


def named_gpus(invocation: Invocation) -> tuple[str, ...] | None:
    """The GPUs an invocation insists on, or None when any one GPU will do."""
    visible = split_visible(dict(invocation.env).get(VISIBLE))
    if visible:
        return visible
    if invocation.options.devices:
        return tuple(str(device) for device in invocation.options.devices)
    return None


def outside_gpus(invocations: Iterable[Invocation], gpus: Sequence[str]) -> str | None:
    """The first problem of an invocation that names a GPU not in `gpus`, as a message; else None."""
    for inv in invocations:
        missing = set(named_gpus(inv) or ()) - set(gpus)
        if missing:
            return f"target {inv.name} names GPU {', '.join(sorted(missing))}, not in --gpus"
    return None


def pin(invocation: Invocation, gpus: tuple[str, ...]) -> Invocation:
    """Run on exactly `gpus`: CUDA_VISIBLE_DEVICES names them, ncu's --devices counts inside that view."""
    env = dict(invocation.env)
    if env.get(VISIBLE):  # the target chose its own view; its devices: are already relative to it
        return invocation
    env[VISIBLE] = ",".join(gpus)
    options = invocation.options.model_copy(update={"devices": tuple(range(len(gpus)))})
    return replace(invocation, env=tuple(sorted(env.items())), options=options)
