"""Markers for your own code: NVTX ranges and cudaProfilerStart/Stop (docs/ncu-behaviour.md, "Filter grammar");
torch is imported only when they run. Both synchronize before and after, so that earlier kernels do not leak in
and the range does not end before its kernels were submitted.

    with ncu_range("decode_step"):     # target: nvtx_include: decode_step/
        logits = model.decode_one_token(...)
    with profiled_region():            # target: profile_from_start: false
        out = run_decode_step(model, inputs)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType


class MarkersNeedTorch(ImportError):
    """The markers drive CUDA through PyTorch; without it they cannot run (a bare ModuleNotFoundError
    said nothing of what to do)."""


def _torch() -> ModuleType:
    try:
        import torch
    except ImportError as exc:
        raise MarkersNeedTorch(
            f"ncucampaign.markers needs PyTorch with CUDA in this Python ({exc}); install it (pip install torch), "
            "or mark ranges with NVTX directly (the nvtx package) and call cudaProfilerStart/Stop yourself"
        ) from None
    module: ModuleType = torch
    return module


@contextmanager
def ncu_range(name: str) -> Iterator[None]:
    """An NVTX push/pop range with clean boundaries (match it with 'name/' in nvtx_include)."""
    torch = _torch()

    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        try:
            torch.cuda.synchronize()
        finally:
            torch.cuda.nvtx.range_pop()


@contextmanager
def profiled_region() -> Iterator[None]:
    """cudaProfilerStart/Stop around a block (profile it with profile_from_start: false)."""
    torch = _torch()
    check_error, cudart = torch.cuda.check_error, torch.cuda.cudart

    torch.cuda.synchronize()
    check_error(cudart().cudaProfilerStart())
    try:
        yield
    finally:
        try:
            torch.cuda.synchronize()
        finally:
            check_error(cudart().cudaProfilerStop())
