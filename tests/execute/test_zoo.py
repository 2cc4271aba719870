"""The zoo of real workloads (tests/gpu/zoo/README.md) is what the shared-runs benchmark and the GPU
tests run: every campaign a user would write (12 targets or more once matrices expand, one of them
misspelt on purpose, every target able to share a run), next to the workload it profiles."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from ncucampaign.plan.expand import build_plan
from ncucampaign.plan.share.groups import share_plan
from ncucampaign.spec.loader import load_campaign

ZOO = Path(__file__).resolve().parents[1] / "gpu" / "zoo"
WORKLOADS = sorted(p.parent for p in ZOO.glob("*/campaign.yaml"))
# The kinds the shared-runs issue names, each with a workload of its own.
KINDS = {"train_step", "compiled", "randn_decode", "streams", "convnet", "cuda_cpp", "decode", "multirank"}
# Workloads from published libraries (issue 66), their campaigns made from discover's suggestions on the H200.
PUBLISHED = {"llama_train", "llama_serve", "moe_train"}


def test_the_zoo_holds_every_kind_of_workload() -> None:
    assert KINDS <= {w.name for w in WORKLOADS} <= KINDS | PUBLISHED


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda p: p.name)
def test_a_zoo_campaign_is_what_a_user_writes_and_every_target_can_share(workload: Path) -> None:
    loaded = load_campaign(workload / "campaign.yaml")
    plan = build_plan(loaded)
    assert len(plan.invocations) >= 12
    assert any("misspelt" in line for line in (workload / "campaign.yaml").read_text().splitlines())
    shared = share_plan(plan.invocations)
    assert not shared.alone and len(shared.groups) == 1 and shared.groups[0].window == "trace"
    command = loaded.campaign.application.command
    words = command if isinstance(command, list) else shlex.split(command)
    scripts = [w for w in words if w.endswith((".py", ".sh"))]
    assert scripts and all((workload / script).is_file() for script in scripts), scripts


def test_the_large_case_is_one_pool_of_360_targets() -> None:
    """tests/gpu/large_case.sh runs it on the GPU: 360 targets in the trace's pool, partitioned when the trace is
    known, at most UNION_LAUNCHES launches a union."""
    plan = build_plan(load_campaign(ZOO / "train_step" / "large.yaml"))
    shared = share_plan(plan.invocations)
    assert len(plan.invocations) == 360 and not shared.alone
    assert [g.window for g in shared.groups] == ["trace"] and len(shared.groups[0].members) == 360
