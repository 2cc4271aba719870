"""A probe for how ncu picks launches: one Triton kernel, `probe_kernel`, launched 40 times in NVTX
ranges it0..it39, alternating two grids (64 blocks on even iterations, 128 on odd), after two warm-up
launches (range `warm`). `--brackets 3,10` wraps those iterations' launches in cudaProfilerStart/Stop.
Used by tests/gpu/kernel_id.sh."""

from __future__ import annotations

import argparse

import torch
import triton
import triton.language as tl


@triton.jit
def probe_kernel(x_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--brackets", default="")
    brackets = {int(i) for i in parser.parse_args().brackets.split(",") if i}
    sizes = (1 << 16, 1 << 17)
    data = [torch.empty(n, device="cuda") for n in sizes]
    torch.cuda.nvtx.range_push("warm")
    for x, n in zip(data, sizes, strict=True):
        probe_kernel[(n // 1024,)](x, n, BLOCK=1024)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    for i in range(40):
        x, n = data[i % 2], sizes[i % 2]
        torch.cuda.nvtx.range_push(f"it{i}")
        if i in brackets:
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStart()
        probe_kernel[(n // 1024,)](x, n, BLOCK=1024)
        if i in brackets:
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
