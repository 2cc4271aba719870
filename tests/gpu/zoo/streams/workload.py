"""Two CUDA streams and two launching threads, written outside ncucampaign. The main thread
interleaves a GEMM and an activation on one stream with a softmax on another; a second CPU thread
launches scans, reductions and gathers on a third stream at the same time, so the order in which the
two threads' launches reach the GPU changes from run to run. Each thread has its own kernel functions
and its own NVTX push/pop ranges (push/pop ranges are per thread): main_step, side_step.

    python3 workload.py --steps 8               # a few seconds on an H200
    python3 workload.py --device cpu --steps 2   # a smoke test without a GPU (one thread's order)
"""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def nvtx(name: str) -> Iterator[None]:
    if torch.cuda.is_available():
        torch.cuda.nvtx.range_push(name)
    try:
        yield
    finally:
        if torch.cuda.is_available():
            torch.cuda.nvtx.range_pop()


def stream_of(device: str) -> contextlib.AbstractContextManager[object]:
    return torch.cuda.stream(torch.cuda.Stream()) if device == "cuda" else contextlib.nullcontext()


def main_thread(steps: int, x: torch.Tensor, w: torch.Tensor, device: str) -> torch.Tensor:
    first = torch.cuda.Stream() if device == "cuda" else None
    second = torch.cuda.Stream() if device == "cuda" else None
    out = x
    for _ in range(steps):
        with nvtx("main_step"):
            with torch.cuda.stream(first) if first else contextlib.nullcontext():
                h = torch.relu(out @ w)
            with torch.cuda.stream(second) if second else contextlib.nullcontext():
                p = torch.softmax(x, dim=-1)
            with torch.cuda.stream(first) if first else contextlib.nullcontext():
                if second is not None:
                    first.wait_stream(second)
                out = torch.relu(h @ w) + p
    return out


def side_thread(steps: int, values: torch.Tensor, index: torch.Tensor, device: str, sums: list[float]) -> None:
    with stream_of(device):  # no elementwise kernels here: those are the main thread's
        peaks = []
        for _ in range(steps):
            with nvtx("side_step"):
                scanned = values.cumsum(dim=-1)
                peaks.append(scanned.index_select(0, index).amax(dim=-1))
        sums.append(float(torch.stack(peaks).sum()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    started = time.perf_counter()
    torch.manual_seed(0)
    device, size = args.device, args.size
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    x = torch.randn(size, size, device=device, dtype=dtype)
    w = torch.randn(size, size, device=device, dtype=dtype) / size**0.5
    values = torch.rand(512, 4096, device=device)
    index = torch.randint(0, 512, (256,), device=device)
    if device == "cuda":
        torch.cuda.synchronize()
    sums: list[float] = []
    side = threading.Thread(target=side_thread, args=(args.steps, values, index, device, sums))
    side.start()
    out = main_thread(args.steps, x, w, device)
    side.join()
    if device == "cuda":
        torch.cuda.synchronize()
    print(
        f"streams: {args.steps} steps, checksums {float(out.float().sum()):.3f} {sums[0]:.3f}, "
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
