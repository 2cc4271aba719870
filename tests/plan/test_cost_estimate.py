"""What validate says a large campaign costs (plan/share/estimate.py): application starts and seconds alone and
shared. Before it, validate said `ok (1 target, 1000 ncu invocations)` of a matrix whose run was 1,000 starts."""

from __future__ import annotations

from pathlib import Path

from ncucampaign.plan.expand import build_plan
from ncucampaign.plan.share.cost import UNION_LAUNCHES
from ncucampaign.plan.share.estimate import LARGE, estimate
from ncucampaign.plan.share.groups import share_plan
from ncucampaign.spec.loader import load_campaign
from tests.conftest import run_cli


def cost_of(path: Path, enabled: bool = True):
    plan = build_plan(load_campaign(path))
    return estimate(share_plan(plan.invocations, enabled))


def test_a_pool_of_600_by_name_is_a_trace_and_its_unions_at_the_fewest(write_campaign) -> None:
    path = write_campaign(f"- name: rms_{{launch_skip}}\n  kernel_name: rmsnorm_kernel\n  matrix:\n"
                          f"    launch_skip: {list(range(300))}\n"
                          f"- name: gemm_{{launch_skip}}\n  kernel_name: regex:nvjet\n  matrix:\n"
                          f"    launch_skip: {list(range(300))}\n")  # fmt: skip
    cost = cost_of(path)
    assert cost.invocations == cost.alone_starts == 600 and cost.traces == 1
    assert cost.shared_starts == 1 + -(-600 // UNION_LAUNCHES) == 4
    assert cost.shared_s < cost.alone_s / 10
    alone = cost_of(path, enabled=False)
    assert alone.shared_starts == alone.alone_starts == 600 and alone.shared_s == alone.alone_s


def test_targets_with_the_same_filters_are_a_union_each_window(write_campaign) -> None:
    path = write_campaign(f"- name: t_{{launch_skip}}\n  matrix:\n    launch_skip: {list(range(60))}\n")
    cost = cost_of(path)
    assert (cost.alone_starts, cost.shared_starts, cost.traces) == (60, 1, 0)


def test_validate_says_it_of_a_large_file_only(tmp_path: Path, write_campaign) -> None:
    large = write_campaign(f"- name: t_{{launch_skip}}\n  matrix:\n    launch_skip: {list(range(LARGE + 1))}\n")
    done = run_cli("validate", str(large), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{LARGE + 1} ncu invocations: {LARGE + 1} application starts alone (about" in done.stdout
    assert "shared, 1 (about" in done.stdout
    small = write_campaign(f"- name: t_{{launch_skip}}\n  matrix:\n    launch_skip: {list(range(LARGE))}\n")
    assert "application starts" not in run_cli("validate", str(small), cwd=tmp_path).stdout
