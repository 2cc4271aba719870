"""A zoo campaign made from discover's suggestions as a user makes one: discover's targets.yaml pasted under
`targets:` as it came (its comments too), the application discover ran, and one target misspelt on purpose (a
plain kernel name of the suggestions with two letters swapped) so that every zoo campaign shows a miss.

    python3 tests/gpu/published/make_campaign.py WORKLOAD OUT/WORKLOAD/targets.yaml > tests/gpu/zoo/W/campaign.yaml
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

WHAT = {
    "llama_train": "transformers' Llama trained a few steps: fused AdamW, Liger's Triton RMSNorm, SwiGLU, RoPE, loss",
    "llama_serve": "transformers' Llama served: prefill, then a decode loop compiled whole (CUDA graphs)",
    "moe_train": "transformers' Mixtral (mixture of experts) trained a few steps",
}


def misspelt(name: str) -> str:
    """Two neighbouring letters of the middle swapped (the first pair that differs)."""
    for i in range(len(name) // 2, len(name) - 1):
        if name[i] != name[i + 1]:
            return name[:i] + name[i + 1] + name[i] + name[i + 2 :]
    return name + "_"


def campaign(workload: str, suggestions: str) -> str:
    targets = yaml.safe_load(suggestions) or []
    plain = next((t for t in targets if not str(t["kernel_name"]).startswith("regex:")), None)
    miss = ""
    if plain is not None:
        kept = {k: v for k, v in plain.items() if k not in ("name", "kernel_name")}
        body = yaml.safe_dump(
            [{"name": f"{plain['name'][:40]}_misspelt", "kernel_name": misspelt(str(plain["kernel_name"])), **kept}],
            sort_keys=False,
            width=1000,
        )
        miss = f"\n# misspelt on purpose: {plain['kernel_name']} with two letters swapped\n{body}"
    pasted = "".join(f"  {line}\n" if line else "\n" for line in (suggestions.rstrip("\n") + "\n" + miss).splitlines())
    return (
        "# yaml-language-server: $schema=../../../../schemas/campaign.schema.json\n"
        "#\n"
        f"# The zoo (tests/gpu/zoo/README.md): {WHAT.get(workload, workload)}.\n"
        "# Its targets are `ncucampaign discover --top 12`'s suggestions (discover.txt and targets.yaml beside this\n"
        "# file, from tests/gpu/published/discover_all.sh on the GPU machine), pasted as they came, and one misspelt on\n"
        "# purpose.\n"
        "version: 1\n"
        f"name: zoo-{workload}\n"
        f"description: {json.dumps(WHAT.get(workload, workload))}\n"
        "\n"
        "application:\n"
        f"  command: python3 {workload}.py\n"
        "  cwd: .\n"
        "\n"
        "defaults:\n"
        "  sections: [SpeedOfLight]\n"
        "  launch_count: 1\n"
        "  timeout: 3m\n"
        "\n"
        "targets:\n"
        f"{pasted}"
    )


if __name__ == "__main__":
    sys.stdout.write(campaign(sys.argv[1], Path(sys.argv[2]).read_text()))
