"""Collective kernels (NCCL, NVSHMEM) in multi-process jobs. Pure. Under kernel replay a collective replayed
alone on one rank waits forever for its peers: seen on two H200s with torchrun, where ncu only warned
(`REPLAY_WARNING`) and hung (docs/ncu-behaviour.md, "Multi-rank jobs")."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ncucampaign.spec.model import TargetOptions
from ncucampaign.spec.ncu_grammar import compile_regex, split_regex

COLLECTIVE_NAMES = "nccl|nvshmem"  # NCCL's ncclDevKernel_*/ncclKernel_*, NVSHMEM's nvshmem*/nvshmemi_*
_COLLECTIVE = re.compile(COLLECTIVE_NAMES, re.IGNORECASE)
REPLAY_WARNING = "Launching the workload is taking more time than expected"
# Names a kernel filter is tried against: what NCCL and NVSHMEM kernels are called in each name base.
SAMPLE_COLLECTIVES = (
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",  # observed on the H200 (function name)
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096UL>)",  # demangled
    "_Z40ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE",  # mangled
    "nvshmemi_barrier_all_kernel",
)
# Launchers that start one process per rank, and the flags of commands that start workers themselves.
_LAUNCHERS = {"torchrun", "mpirun", "mpiexec", "srun", "deepspeed", "accelerate", "torch.distributed.run"}
_WORKER_FLAGS = re.compile(r"^--?(nproc[-_]per[-_]node|nproc|np|n[-_]?workers|workers|world[-_]size)(=|$)")


def is_collective(kernel: str) -> bool:
    return _COLLECTIVE.search(kernel) is not None


def launcher_of(argv: Sequence[str]) -> str | None:
    """The multi-process launcher or worker flag in an application command, or None."""
    for word in argv:
        name = word.rsplit("/", 1)[-1]
        if name in _LAUNCHERS:
            return name
        if _WORKER_FLAGS.match(word):
            return word.split("=", 1)[0]
    return None


def can_match_collective(options: TargetOptions) -> str | None:
    """A collective kernel name this target's kernel filter selects, or None when it selects none."""
    if options.kernel_id:
        name = options.kernel_id.split(":")[2:-1]  # ctx:stream:[regex:]name:invocation
        return SAMPLE_COLLECTIVES[0] if any(is_collective(part) for part in name) else None
    if not options.kernel_name:
        return SAMPLE_COLLECTIVES[0]
    is_regex, pattern = split_regex(options.kernel_name)
    if not is_regex:
        return options.kernel_name if is_collective(options.kernel_name) else None
    compiled, error = compile_regex(pattern)
    if compiled is None or error:
        return None
    return next((name for name in SAMPLE_COLLECTIVES if compiled.search(name)), None)


# Kernels of other kinds, and the collectives' names with their NCCL/NVSHMEM part blotted out: a
# filter that matches none of them selects collectives only (`regex:nccl`).
_OTHER_KERNELS = (
    "rmsnorm_kernel",
    "void at::vectorized_elementwise_kernel<4, at::AddFunctor<float>>(int, T2)",
    "nvjet_sm90_hsh_64x8_64x16_2x1_v_bz_NNT",
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0",
    "triton_poi_fused_add_0",
    *(_COLLECTIVE.sub(lambda m: "x" * len(m.group()), name) for name in SAMPLE_COLLECTIVES),
)


def excluding_collectives(kernel_name: str | None) -> str | None:
    """`kernel_name` that selects what it did except collective kernels (a negative lookahead, which
    ncu's regexes support: docs/ncu-behaviour.md, "Multi-rank jobs"); None when the filter names one
    kernel exactly or selects collectives only (then the exclusion would match nothing at all)."""
    exclude = f"^(?!.*(?:{COLLECTIVE_NAMES}))"
    if not kernel_name:
        return f"regex:{exclude}"
    is_regex, pattern = split_regex(kernel_name)
    if not is_regex:
        return None
    compiled, _ = compile_regex(pattern)
    if compiled is not None and not any(compiled.search(name) for name in _OTHER_KERNELS):
        return None
    return f"regex:{exclude}.*(?:{pattern})"
