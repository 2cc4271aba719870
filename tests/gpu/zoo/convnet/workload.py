"""A small convolutional network written outside ncucampaign: convolutions, batch norms and ReLUs
(cuDNN and PyTorch's own kernels), max pooling and a linear head, in half precision, channels last,
inference. NVTX push/pop ranges per batch: batch > stem | stage1 | stage2 | head.

    python3 workload.py --batches 6             # a few seconds on an H200
    python3 workload.py --device cpu --batches 2 # a smoke test without a GPU
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator

import torch
import torch.nn as nn


@contextlib.contextmanager
def nvtx(name: str) -> Iterator[None]:
    if torch.cuda.is_available():
        torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        if torch.cuda.is_available():
            torch.cuda.nvtx.range_pop()


def conv_bn(inputs: int, outputs: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(inputs, outputs, 3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(outputs),
        nn.ReLU(inplace=True),
    )


class ConvNet(nn.Module):
    def __init__(self, classes: int = 100) -> None:
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 32, stride=2), nn.MaxPool2d(2))
        self.stage1 = nn.Sequential(conv_bn(32, 64), conv_bn(64, 64))
        self.stage2 = nn.Sequential(conv_bn(64, 128, stride=2), conv_bn(128, 128))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for name in ("stem", "stage1", "stage2", "head"):
            with nvtx(name):
                x = getattr(self, name)(x)
        return x


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    started = time.perf_counter()
    torch.manual_seed(0)
    cuda = args.device == "cuda"
    dtype = torch.float16 if cuda else torch.float32
    model = ConvNet().to(args.device, dtype).to(memory_format=torch.channels_last).eval()
    images = torch.randn(args.batch, 3, args.size, args.size, device=args.device, dtype=dtype)
    images = images.to(memory_format=torch.channels_last)
    with torch.no_grad():
        for _ in range(args.batches):
            with nvtx("batch"):
                logits = model(images)
    if cuda:
        torch.cuda.synchronize()
    print(
        f"convnet: {args.batches} batches, checksum {float(logits.float().sum()):.3f}, "
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
