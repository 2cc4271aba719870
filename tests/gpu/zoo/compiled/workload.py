"""torch.compile written outside ncucampaign: one function compiled as is (Inductor's Triton kernels,
triton_poi_/triton_red_/triton_per_ names, and cuBLAS for the matrix products) and one compiled with
mode="reduce-overhead", whose kernels are replayed from CUDA graphs after two warm-up calls. NVTX
push/pop ranges per step: compiled, graphed.

    python3 workload.py --steps 8               # the first run compiles (about 15 s); later ones
                                                # take Inductor's cache (a few seconds)
    python3 workload.py --device cpu --steps 2   # a smoke test without a GPU (no CUDA graphs)
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator

import torch
import torch.nn.functional as F


@contextlib.contextmanager
def nvtx(name: str) -> Iterator[None]:
    if torch.cuda.is_available():
        torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        if torch.cuda.is_available():
            torch.cuda.nvtx.range_pop()


def mixer(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, scale: float) -> torch.Tensor:
    h = F.gelu(x @ w1) * scale
    h = h + torch.softmax(h, dim=-1)
    return F.layer_norm(h @ w2 + x, (x.shape[-1],))


def gate(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    g = torch.sigmoid(x @ w + bias)
    return x * g + torch.tanh(x).sum(dim=-1, keepdim=True) / x.shape[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--rows", type=int, default=512)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    started = time.perf_counter()
    torch.manual_seed(0)
    device, width = args.device, args.width
    x = torch.randn(args.rows, width, device=device)
    w1, w2, w3 = (torch.randn(width, width, device=device) / width**0.5 for _ in range(3))
    bias = torch.zeros(width, device=device)
    compiled = torch.compile(mixer)
    graphed = torch.compile(gate, mode="reduce-overhead")
    for _ in range(args.steps):
        with nvtx("compiled"):
            y = compiled(x, w1, w2, 0.5)
        with nvtx("graphed"):
            z = graphed(y, w3, bias).clone()  # the graph's output is overwritten by its next replay
    if device == "cuda":
        torch.cuda.synchronize()
    print(f"compiled: {args.steps} steps, checksum {float(z.sum()):.3f}, {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
