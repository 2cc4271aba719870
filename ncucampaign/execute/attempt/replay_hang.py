"""Explain an attempt stopped as replay_hang, with the fixes that work on the installed ncu (asked through
`NcuChecks`; why it hangs: docs/ncu-behaviour.md, "Multi-rank jobs"). Pure."""

from __future__ import annotations

from typing import Protocol

from ncucampaign.execute.attempt.classify import ConsoleSummary
from ncucampaign.plan.collectives import excluding_collectives, is_collective
from ncucampaign.spec.model import TargetOptions


class NcuChecks(Protocol):
    """Questions to the installed ncu; None: it could not be asked."""

    def accepts_kernel_name(self, expression: str) -> bool | None: ...
    def lists_option(self, flag: str) -> bool | None: ...


def replay_hang_hints(options: TargetOptions, console: ConsoleSummary, checks: NcuChecks | None) -> list[str]:
    kernel = console.last_profiled
    hints = [_why(kernel)]
    hints.extend(_exclusion(options, checks))
    hints.append(
        "to profile one rank's compute kernels only, add devices: [0] (ncu --devices 0) or a "
        "target_processes_filter: the other ranks then run unprofiled. A collective on the profiled rank "
        "still hangs under kernel replay, so keep collectives out of the kernel filter as well"
    )
    if checks is not None and checks.lists_option("--communicator"):
        hints.append(COMMUNICATOR_FIX)
    else:
        hints.append(NO_REPLAY_PROFILES_COLLECTIVES)
    return hints


# Measured on an H200 x2 with ncu 2025.3.1 (tests/gpu/collective_replay.yaml; docs/ncu-behaviour.md,
# "Multi-rank jobs"): no replay mode profiled the all-reduce of a 2-rank torchrun job.
NO_REPLAY_PROFILES_COLLECTIVES = (
    "this ncu has no multi-process profiling (--communicator came with ncu 2026.1), and no replay mode of ncu "
    "2025.3.1 profiled the all-reduce of a 2-rank torchrun job on an H200 x2: kernel and application replay hung "
    "on it (also with devices: [0]), range replay failed ('Unsupported API during capture (cuInit)') and app-range "
    "replay of a range around it failed on its second pass. Profile the compute kernels here, and the collectives "
    "with ncu 2026.1 or later (communicator: shmem)"
)
COMMUNICATOR_FIX = (
    "the installed ncu has multi-process profiling (ncu 2026.1 and later): communicator: shmem, "
    "communicator_shmem_num_peers: <ranks>, lockstep_kernel_launch: true replays collectives on all ranks "
    "together, one ncu over the whole process tree (NVIDIA's documentation; only ncu 2025.3.1 was measured here)"
)


def _why(kernel: str | None) -> str:
    if kernel and is_collective(kernel):
        return (
            f'"{kernel}" is a collective kernel. ncu replays each profiled kernel alone, once per pass '
            "(replay_mode: kernel): replayed on one rank while its peers are not, a collective waits for them "
            "forever. ncu's only sign is its warning 'Launching the workload is taking more time than expected'"
        )
    named = f'"{kernel}"' if kernel else "the kernel being profiled"
    return (
        f"{named} made no progress under kernel replay after ncu warned that launching the workload takes more "
        "time than expected: a kernel that waits on another process or GPU (a collective, a spin-wait on a "
        "flag) cannot be replayed alone"
    )


def _exclusion(options: TargetOptions, checks: NcuChecks | None) -> list[str]:
    if options.kernel_id:
        return [
            "kernel_id selects the kernel by name: make its name part leave out collective kernels, "
            "e.g. kernel_id: '::regex:^(?!nccl|nvshmem):1'"
        ]
    expression = excluding_collectives(options.kernel_name)
    if expression is None:
        return [
            f"kernel_name {options.kernel_name!r} selects the collective kernels themselves: kernel replay "
            "cannot profile them while their peers run, and leaving them out would leave nothing (below: what "
            "can profile them)"
        ]
    accepted = checks.accepts_kernel_name(expression) if checks is not None else None
    verdict = {
        True: "the installed ncu accepts it",
        False: "the installed ncu refuses this expression: exclude the collectives by NVTX range instead",
        None: "not checked against the installed ncu",
    }[accepted]
    return [f"exclude collective kernels from the filter: kernel_name: '{expression}' ({verdict})"]
