"""A Llama-family causal LM from `transformers`, built from its config (random weights, nothing downloaded), trained
a few steps: forward, loss, backward, fused AdamW, with `liger-kernel`'s Triton kernels patched in (RMSNorm, SwiGLU,
RoPE, fused linear cross entropy). No NVTX ranges and no profiler calls, as users' scripts mostly have none.

    python3 llama_train.py --steps 6              # on the GPU machine, with wheels.sh's wheels on PYTHONPATH
    python3 llama_train.py --device cpu --steps 1 --no-liger   # that it starts (Liger's kernels need a GPU)

Written without a GPU (issue 66): its kernels, discover's suggestions and its campaign wait for the GPU machine."""

from __future__ import annotations

import argparse
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def small_llama(**extra: object) -> LlamaConfig:
    """The family's shape at a size that runs in seconds (llama_serve.py serves the same)."""
    return LlamaConfig(
        vocab_size=32000,
        hidden_size=1024,
        intermediate_size=2816,
        num_hidden_layers=4,
        num_attention_heads=16,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        attn_implementation="sdpa",
        **extra,
    )


def model_of(device: str, liger: bool) -> LlamaForCausalLM:
    if liger:  # class-level patches (RMSNorm, SwiGLU MLP, RoPE, the loss): before the model is built
        from liger_kernel.transformers import apply_liger_kernel_to_llama

        apply_liger_kernel_to_llama(rope=True, rms_norm=True, swiglu=True, fused_linear_cross_entropy=True)
    config = small_llama()
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    return LlamaForCausalLM(config).to(device=device, dtype=dtype)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--no-liger", action="store_true", help="transformers' own modules")
    args = parser.parse_args()
    model = model_of(args.device, liger=not args.no_liger and args.device == "cuda")
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=args.device == "cuda")
    generator = torch.Generator(device=args.device).manual_seed(1)
    start = time.perf_counter()
    for _ in range(args.steps):
        ids = torch.randint(0, model.config.vocab_size, (args.batch, args.seq), device=args.device, generator=generator)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    if args.device == "cuda":
        torch.cuda.synchronize()
    print(f"llama_train: {args.steps} steps, loss {loss.item():.3f}, {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
