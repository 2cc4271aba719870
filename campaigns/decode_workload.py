"""A small LLM-like decode loop to profile with campaigns/decode.yaml (one GPU, well under a minute).

Kernels: cuBLAS GEMMs (projections and MLP), scaled-dot-product attention (cuDNN / flash), a Triton
`rmsnorm_kernel`, PyTorch elementwise kernels. NVTX push/pop ranges, as the manual marks code:
`prefill`, then per step `decode_step` > `layer` > `attention` | `mlp`; `graph_step` in --graph mode.

Modes: --workers N (the decode loop runs in N child processes), --graph (one decode step captured as
a CUDA graph and replayed), --profile-step N (cudaProfilerStart/Stop around step N), and for tests
--hang-at-step N / --exit-code N.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn.functional as F  # noqa: N812
import triton
import triton.language as tl

from ncucampaign.markers import ncu_range, profiled_region


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):  # noqa: N803
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n_cols
    x = tl.load(x_ptr + row * n_cols + offsets, mask=mask, other=0.0).to(tl.float32)
    mean_square = tl.sum(x * x, axis=0) / n_cols
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.rsqrt(mean_square + eps) * w
    tl.store(y_ptr + row * n_cols + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    rows, cols = x.shape
    y = torch.empty_like(x)
    rmsnorm_kernel[(rows,)](x, weight, y, cols, eps, BLOCK=triton.next_power_of_2(cols))
    return y


@dataclass
class Layer:
    norm1: torch.Tensor
    norm2: torch.Tensor
    wqkv: torch.Tensor
    wo: torch.Tensor
    w1: torch.Tensor
    w2: torch.Tensor
    k_cache: torch.Tensor
    v_cache: torch.Tensor


def make_layers(args: argparse.Namespace, device: torch.device) -> list[Layer]:
    h, dtype = args.hidden, torch.float16
    head_dim = h // args.heads
    cache_shape = (args.batch, args.heads, args.context + args.steps + 1, head_dim)
    # --ffn-extra: a wider MLP, in multiples of 128 (a knob for compare's tests: the down projection's
    # GEMM reads that much more weight with the same output, grid and block if cuBLAS keeps its kernel).
    ffn = round(4 * h * (1 + args.ffn_extra) / 128) * 128

    def weight(rows: int, cols: int) -> torch.Tensor:
        return torch.randn(rows, cols, device=device, dtype=dtype) / math.sqrt(rows)

    return [
        Layer(
            norm1=torch.ones(h, device=device, dtype=dtype),
            norm2=torch.ones(h, device=device, dtype=dtype),
            wqkv=weight(h, 3 * h),
            wo=weight(h, h),
            w1=weight(h, ffn),
            w2=weight(ffn, h),
            k_cache=torch.randn(cache_shape, device=device, dtype=dtype),
            v_cache=torch.randn(cache_shape, device=device, dtype=dtype),
        )
        for _ in range(args.layers)
    ]


def run_attention(x: torch.Tensor, layer: Layer, position: int, heads: int) -> torch.Tensor:
    batch, hidden = x.shape
    q, k, v = (x @ layer.wqkv).view(batch, 3, heads, 1, hidden // heads).unbind(dim=1)
    layer.k_cache[:, :, position : position + 1] = k
    layer.v_cache[:, :, position : position + 1] = v
    keys = layer.k_cache[:, :, : position + 1]
    values = layer.v_cache[:, :, : position + 1]
    out = F.scaled_dot_product_attention(q, keys, values)
    return out.reshape(batch, hidden) @ layer.wo


def run_mlp(x: torch.Tensor, layer: Layer) -> torch.Tensor:
    return F.silu(x @ layer.w1) @ layer.w2


def decode_step(x: torch.Tensor, layers: list[Layer], position: int, heads: int, marked: bool) -> torch.Tensor:
    """One token through every layer; `marked` puts the NVTX ranges in (off inside graph capture)."""
    mark = ncu_range if marked else (lambda _name: nullcontext())
    for layer in layers:
        with mark("layer"):
            h = rmsnorm(x, layer.norm1)
            with mark("attention"):
                x = x + run_attention(h, layer, position, heads)
            with mark("mlp"):
                h = rmsnorm(x, layer.norm2)
                x = x + run_mlp(h, layer)
    return x


def run(args: argparse.Namespace) -> float:
    torch.manual_seed(0)
    device = torch.device("cuda")
    layers = make_layers(args, device)
    x = torch.randn(args.batch, args.hidden, device=device, dtype=torch.float16)
    with ncu_range("prefill"):
        prompt = torch.randn(args.batch * 16, args.hidden, device=device, dtype=torch.float16)
        for layer in layers:
            prompt = rmsnorm(prompt @ layer.wo, layer.norm1)
    if args.graph:
        return run_graph(args, layers, x)
    for step in range(1, args.steps + 1):
        if args.hang_at_step == step:
            print(f"[decode pid={os.getpid()}] hanging at step {step}", flush=True)
            while True:
                time.sleep(1)
        region = profiled_region() if args.profile_step == step else nullcontext()
        with region, ncu_range("decode_step"):
            x = decode_step(x, layers, args.context + step, args.heads, marked=True)
    torch.cuda.synchronize()
    return float(x.float().sum())


def run_graph(args: argparse.Namespace, layers: list[Layer], x: torch.Tensor) -> float:
    position = args.context + 1
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up (Triton compiles) outside the capture
        for _ in range(2):
            decode_step(x, layers, position, args.heads, marked=False)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = decode_step(x, layers, position, args.heads, marked=False)
    for _ in range(args.steps):
        with ncu_range("graph_step"):
            graph.replay()
    torch.cuda.synchronize()
    return float(out.float().sum())


def worker(args: argparse.Namespace) -> None:
    print(f"[decode pid={os.getpid()}] worker checksum={run(args):.4f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--workers", type=int, default=0, help="run the loop in N child processes")
    parser.add_argument("--graph", action="store_true", help="replay one decode step as a CUDA graph")
    parser.add_argument("--profile-step", type=int, default=None, help="cudaProfilerStart/Stop around step N")
    parser.add_argument("--hang-at-step", type=int, default=None, help="hang forever at step N (tests)")
    parser.add_argument("--exit-code", type=int, default=0, help="exit with this code after the run (tests)")
    parser.add_argument(
        "--ffn-extra",
        type=float,
        default=float(os.environ.get("DECODE_FFN_EXTRA", "0")),
        help="make the MLP this fraction wider (default $DECODE_FFN_EXTRA or 0): more work for its GEMMs",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.workers:
        context = multiprocessing.get_context("spawn")
        processes = [context.Process(target=worker, args=(args,)) for _ in range(args.workers)]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        failed = [p.exitcode for p in processes if p.exitcode]
        if failed:
            print(f"[decode] worker failed with {failed[0]}", file=sys.stderr)
            return 1
    else:
        checksum = run(args)
        print(f"[decode pid={os.getpid()}] done steps={args.steps} checksum={checksum:.4f}", flush=True)
    print(f"[decode] {time.perf_counter() - started:.1f} s", flush=True)
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
