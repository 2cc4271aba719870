"""A small data-parallel step on every rank, to profile with campaigns/multirank.yaml under torchrun
(two GPUs, NCCL, well under a minute):

    torchrun --standalone --nproc_per_node=2 multirank_workload.py --steps 20

Per step, inside the NVTX push/pop range `step`: a bf16 GEMM (cuBLAS), scaled-dot-product attention
(flash / cuDNN), then an all-reduce of the GEMM's output (an NCCL collective kernel, which waits for
every rank: ncu cannot replay it on one rank alone).
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F  # noqa: N812

from ncucampaign.markers import ncu_range


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--size", type=int, default=4096, help="GEMM size")
    args = parser.parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(rank)
    a = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    q, k, v = (torch.randn(8, 16, 1024, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out = torch.empty(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    dist.barrier()
    for _ in range(args.steps):
        with ncu_range("step"):
            torch.matmul(a, b, out=out)
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
            dist.all_reduce(out)
    torch.cuda.synchronize()
    print(f"rank {rank}/{world} on cuda:{local_rank}: {args.steps} steps", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
