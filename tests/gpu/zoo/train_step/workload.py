"""A training loop written outside ncucampaign: a small transformer-style classifier, forward, a
cross-entropy loss, backward (autograd launches its kernels from its own thread), gradient clipping
and two AdamW optimizers: fused for the matrices, multi-tensor (foreach) for the rest. NVTX push/pop
ranges per step: step > forward | loss | backward | optimizer.

    python3 workload.py --steps 6               # a few seconds on an H200
    python3 workload.py --device cpu --steps 2   # a smoke test without a GPU (no NVTX)
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F


@contextlib.contextmanager
def nvtx(name: str) -> Iterator[None]:
    if torch.cuda.is_available():
        with torch.cuda.nvtx.range(name):
            yield
    else:
        yield


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, 8, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.norm(x))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    started = time.perf_counter()
    torch.manual_seed(0)
    model = nn.Sequential(*[Block(args.width) for _ in range(args.depth)], nn.Linear(args.width, 100)).to(args.device)
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    others = [p for p in model.parameters() if p.dim() < 2]
    cuda = args.device == "cuda"
    fused = torch.optim.AdamW(matrices, lr=1e-3, fused=cuda)
    multi_tensor = torch.optim.AdamW(others, lr=1e-3, foreach=cuda)
    x = torch.randn(args.batch, args.tokens, args.width, device=args.device)
    labels = torch.randint(0, 100, (args.batch,), device=args.device)
    for _ in range(args.steps):
        with nvtx("step"):
            with nvtx("forward"), torch.autocast(args.device, dtype=torch.bfloat16, enabled=cuda):
                logits = model(x).mean(dim=1)
            with nvtx("loss"):
                loss = F.cross_entropy(logits.float(), labels)
            with nvtx("backward"):
                loss.backward()
            with nvtx("optimizer"):
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                fused.step()
                multi_tensor.step()
                fused.zero_grad(set_to_none=True)
                multi_tensor.zero_grad(set_to_none=True)
    if cuda:
        torch.cuda.synchronize()
    print(f"train_step: {args.steps} steps, loss {loss.item():.4f}, {time.perf_counter() - started:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
