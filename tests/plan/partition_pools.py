"""Random trace pools for the partition: a trace of L launches of a few kernels in NVTX scopes, and members that
select by kernel (one, or a regex of two), within a scope or not, at a random skip and count, asking for one of
three collections; with function names (picked windows possible) most of the time. Deterministic per seed.

    python -m tests.plan.partition_pools --record tests/fixtures/partition_reference.json

records the total priced cost of the groups that the installed partition chooses on each pool (run it with an
older checkout first on PYTHONPATH to record that one's search; the fixture holds 311a033's)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
from pathlib import Path

from ncucampaign.plan.share.cost import Costs
from ncucampaign.plan.share.partition import partition
from ncucampaign.plan.share.pricing import Placed, group_cost
from tests.conftest import invocation

KERNELS = ("rmsnorm", "gemm", "attn", "elementwise", "softmax", "copy")
SECTIONS = (("SpeedOfLight",), ("SpeedOfLight", "Occupancy"), ("MemoryWorkloadAnalysis",))
POOLS = 100
TIMEOUT_S = 7200.0


def pool(seed: int, size: int) -> tuple[list[Placed], Costs]:
    rng = random.Random(seed)
    length = rng.choice((240, 600, 1500))
    kernels = KERNELS[: rng.randint(2, len(KERNELS))]
    weights = [rng.randint(1, 6) for _ in kernels]
    trace = rng.choices(kernels, weights, k=length)  # which kernel each launch is
    ids = {kernel: frozenset(i for i, k in enumerate(trace) if k == kernel) for kernel in kernels}
    scopes = {"decode": frozenset(range(length // 5, length)), "mlp": frozenset(range(0, length, 2))}
    members: list[Placed] = []
    while len(members) < size:
        chosen = rng.sample(kernels, rng.choice((1, 1, 1, 2)))
        kernel_ids = frozenset().union(*(ids[k] for k in chosen))
        scope_name = rng.choice((None, None, "decode", "mlp"))
        scope = scopes[scope_name] if scope_name else None
        selected = tuple(sorted(kernel_ids & scope if scope is not None else kernel_ids))
        count = min(rng.choice((1, 1, 1, 2, 3)), len(selected))
        if not count:
            continue
        skip = rng.randrange(len(selected) - count + 1)
        name = chosen[0] if len(chosen) == 1 else "regex:" + "|".join(chosen)
        nvtx = {"nvtx_include": (f"{scope_name}/",)} if scope_name else {}
        options = {"kernel_name": name, "launch_skip": skip, "launch_count": count, "sections": rng.choice(SECTIONS)}
        # A timeout that no union of these reaches: what is compared is the search, not the cap a timeout sets.
        member = dataclasses.replace(invocation(f"t{len(members)}", **options, **nvtx), timeout=TIMEOUT_S)
        family = (name, "|", scope_name or "")
        members.append(Placed(member, selected, selected[skip : skip + count], kernel_ids, scope, family))
    functions = dict(enumerate(trace)) if rng.random() < 0.7 else None
    return members, Costs(start_s=rng.choice((4.0, 10.0, 20.0)), functions=functions)


def pools() -> list[tuple[int, int]]:
    """(seed, size) of each pool: sizes 20-150."""
    rng = random.Random(63)
    return [(seed, rng.randint(20, 150)) for seed in range(POOLS)]


def total_cost(members: list[Placed], costs: Costs) -> float:
    return sum(group_cost(group, costs) for group in partition(members, costs))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", type=Path, required=True)
    args = parser.parse_args()
    recorded = []
    for seed, size in pools():
        members, costs = pool(seed, size)
        recorded.append({"seed": seed, "size": size, "cost": round(total_cost(members, costs), 6)})
        print(recorded[-1], file=sys.stderr, flush=True)
    args.record.write_text(json.dumps(recorded, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
