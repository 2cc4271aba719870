"""Options ncu needs for the ones a target gives, and the ones ncucampaign pins where a target gives
none (docs/ncu-behaviour.md, "Implied options"): applied once, when a target is resolved. Pure."""

from __future__ import annotations

from typing import Any

from ncucampaign.errors import Problem
from ncucampaign.plan.command import PlanProblems
from ncucampaign.spec.ncu_versions import PINNED_CLOCK_CONTROL


def implied_options(values: dict[str, Any], here: tuple[str | int, ...]) -> dict[str, Any]:
    """Options ncu needs for the ones given (docs/ncu-behaviour.md, "Implied options"), applied once here."""
    implied: dict[str, Any] = {}
    if values.get("nvtx_include") or values.get("nvtx_exclude"):
        if values.get("nvtx") is False:
            raise PlanProblems(
                [Problem((*here, "nvtx"), "nvtx_include/exclude need --nvtx (ncu: '--nvtx-include requires --nvtx')")]
            )
        implied["nvtx"] = True
    stacks = list(values.get("call_stack_type") or ())
    stacks += [s for s in ("python", "native") if (values.get(f"{s}_include") or values.get(f"{s}_exclude"))]
    stacks = list(dict.fromkeys(stacks))
    if stacks:
        implied["call_stack_type"] = tuple(stacks)
    if (values.get("samples") or 1) > 1:  # a sample is one more matching launch (docs/results.md, "compare")
        if values.get("launch_count") not in (None, 1, values["samples"]):
            raise PlanProblems([Problem((*here, "samples"), "samples takes a launch each: launch_count must be 1")])
        implied["launch_count"] = values["launch_count"] = values["samples"]
    if values.get("kill") is None and values.get("launch_count") is not None:
        implied["kill"] = True  # stop the application once the launch count is profiled
    if values.get("clock_control") is None:
        implied["clock_control"] = PINNED_CLOCK_CONTROL  # the same clocks whatever ncu's own default
    for key in ("config_file", "rename_kernels"):  # no stray file beside the workload changes the command
        if values.get(key) is None:
            implied[key] = False
    return implied
