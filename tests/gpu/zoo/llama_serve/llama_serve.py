"""The same family served: a prompt's prefill, then a greedy decode loop with a static KV cache and the model's
decode steps compiled by generate() itself (mode "reduce-overhead"), so their kernels replay from CUDA graphs
(ncu profiles a graph's kernel nodes one by one). Random weights from the config; nothing downloaded; no NVTX.

    python3 llama_serve.py --new-tokens 32        # on the GPU machine, with wheels.sh's wheels on PYTHONPATH
    python3 llama_serve.py --device cpu --new-tokens 2 --no-compile   # that it starts

Written without a GPU (issue 66): its kernels, discover's suggestions and its campaign wait for the GPU machine."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from transformers import LlamaForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llama_train"))  # the trained model's config, beside
from llama_train import small_llama


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--prompt", type=int, default=256, help="prompt tokens (the prefill)")
    parser.add_argument("--new-tokens", type=int, default=32, help="decode steps")
    parser.add_argument("--no-compile", action="store_true", help="eager decode steps, no CUDA graphs")
    args = parser.parse_args()
    # random weights: decode the whole length, never stop early
    config = small_llama(eos_token_id=None, pad_token_id=0)
    torch.manual_seed(0)
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
    model = LlamaForCausalLM(config).to(device=args.device, dtype=dtype).eval()
    # A static cache fixes the shapes; with it, generate() compiles the decode steps itself on a GPU
    # (transformers' CompileConfig: mode "reduce-overhead", CUDA graphs) and runs the prefill eagerly, which fills
    # the cache outside any graph. Compiling model.forward by hand as well recorded the prefill's cache writes into
    # a graph, and the H200 run failed: "accessing tensor output of CUDAGraphs that has been overwritten".
    model.generation_config.cache_implementation = "static"
    model.generation_config.disable_compile = args.no_compile
    prompt = torch.randint(0, config.vocab_size, (1, args.prompt), device=args.device)
    start = time.perf_counter()
    with torch.inference_mode():
        for _ in range(2):  # the first compiles and records the graphs; the second replays them
            out = model.generate(prompt, max_new_tokens=args.new_tokens, do_sample=False)
    if args.device == "cuda":
        torch.cuda.synchronize()
    print(f"llama_serve: {out.shape[1] - args.prompt} new tokens twice, {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
