"""A decode loop written outside ncucampaign, as the shared-runs issue found it: weights and a KV cache
from torch.randn (templated distribution kernels in an anonymous namespace), a scalar multiply and a
dropout (templated lambda kernels with long names), a Triton RMSNorm, SDPA and cuBLAS GEMMs, under
NVTX push/pop ranges prefill, decode_step > layer > attention | mlp. It knows nothing of ncucampaign.

    python3 workload.py --steps 8              # about 5 s on an H200
    python3 workload.py --device cpu --steps 2  # a smoke test without a GPU (no Triton, no NVTX)
"""

from __future__ import annotations

import argparse
import contextlib
import math
import time
from collections.abc import Iterator

import torch
import torch.nn.functional as F

try:
    import triton
    import triton.language as tl
except ImportError:  # a CPU-only machine
    triton = None


if triton is not None:

    @triton.jit
    def _rms_norm_fwd(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * n_cols + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    if triton is None or not x.is_cuda:
        return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)
    y = torch.empty_like(x)
    _rms_norm_fwd[(x.shape[0],)](x, w, y, x.shape[1], eps, BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


@contextlib.contextmanager
def nvtx(name: str) -> Iterator[None]:
    """A push/pop range, as PyTorch's own context manager makes it (nothing on a CPU-only build)."""
    if not torch.cuda.is_available():
        yield
        return
    torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        torch.cuda.nvtx.range_pop()


class Layer:
    def __init__(self, hidden: int, heads: int, cache: int, batch: int, device: str, dtype: torch.dtype) -> None:
        scale = 1 / math.sqrt(hidden)
        self.heads = heads
        self.norm = torch.ones(hidden, device=device, dtype=dtype)
        self.wqkv = torch.randn(hidden, 3 * hidden, device=device, dtype=dtype) * scale
        self.wo = torch.randn(hidden, hidden, device=device, dtype=dtype) * scale
        self.w_up = torch.randn(hidden, 4 * hidden, device=device, dtype=dtype) * scale
        self.w_down = torch.randn(4 * hidden, hidden, device=device, dtype=dtype) * scale
        shape = (batch, heads, cache, hidden // heads)
        self.k = torch.randn(shape, device=device, dtype=dtype)
        self.v = torch.randn(shape, device=device, dtype=dtype)

    def attention(self, x: torch.Tensor, position: int) -> torch.Tensor:
        batch, hidden = x.shape
        q, k, v = (x @ self.wqkv).view(batch, 3, self.heads, 1, hidden // self.heads).unbind(1)
        self.k[:, :, position : position + 1] = k
        self.v[:, :, position : position + 1] = v
        out = F.scaled_dot_product_attention(q, self.k[:, :, : position + 1], self.v[:, :, : position + 1])
        return out.reshape(batch, hidden) @ self.wo

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        up = F.gelu(x @ self.w_up)
        return F.dropout(up, p=0.1, training=True) @ self.w_down

    def __call__(self, x: torch.Tensor, position: int) -> torch.Tensor:
        with nvtx("layer"):
            with nvtx("attention"):
                x = x + self.attention(rms_norm(x, self.norm), position)
            with nvtx("mlp"):
                x = x + self.mlp(rms_norm(x, self.norm)) * 0.5  # a scalar multiply
        return x


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--prompt", type=int, default=256)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    started = time.perf_counter()
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
    torch.manual_seed(0)
    cache = args.prompt + args.steps + 1
    layers = [Layer(args.hidden, args.heads, cache, args.batch, args.device, dtype) for _ in range(args.layers)]
    with nvtx("prefill"):
        prompt = torch.randn(args.batch * args.prompt // 16, args.hidden, device=args.device, dtype=dtype)
        for layer in layers:
            prompt = rms_norm(prompt @ layer.wo, layer.norm)
    x = torch.randn(args.batch, args.hidden, device=args.device, dtype=dtype)
    for step in range(args.steps):
        with nvtx("decode_step"):
            for layer in layers:
                x = layer(x, args.prompt + step)
    if args.device == "cuda":
        torch.cuda.synchronize()
    print(
        f"randn_decode: {args.steps} steps, checksum {float(x.float().sum()):.3f}, "
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
