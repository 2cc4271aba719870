"""A mixture-of-experts causal LM from `transformers` (Qwen2-MoE, built from its config: random weights, nothing
downloaded), trained a few steps: top-k routing, per-expert GEMMs of varying sizes, a shared expert, AdamW. No NVTX.

    python3 moe_train.py --steps 6                # on the GPU machine, with wheels.sh's wheels on PYTHONPATH
    python3 moe_train.py --device cpu --steps 1   # that it starts

Written without a GPU (issue 66): its kernels, discover's suggestions and its campaign wait for the GPU machine."""

from __future__ import annotations

import argparse
import time

import torch
from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=256)
    args = parser.parse_args()
    config = Qwen2MoeConfig(
        vocab_size=32000,
        hidden_size=768,
        intermediate_size=2048,
        moe_intermediate_size=512,
        shared_expert_intermediate_size=1024,
        num_experts=8,
        num_experts_per_tok=2,
        num_hidden_layers=2,
        num_attention_heads=12,
        num_key_value_heads=4,
        max_position_embeddings=1024,
        attn_implementation="sdpa",
    )
    torch.manual_seed(0)
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
    model = Qwen2MoeForCausalLM(config).to(device=args.device, dtype=dtype).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=args.device == "cuda")
    start = time.perf_counter()
    for _ in range(args.steps):
        ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device=args.device)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    if args.device == "cuda":
        torch.cuda.synchronize()
    print(f"moe_train: {args.steps} steps, loss {loss.item():.3f}, {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
