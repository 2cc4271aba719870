"""Scheduling units: plan order, longest first by the previous run's times, and reading those times."""

from __future__ import annotations

import json
from pathlib import Path

from ncucampaign.execute.prepare import earlier_manifest, previous_seconds
from ncucampaign.plan.share.groups import SharedGroup
from ncucampaign.plan.units import longest_first, units_in_plan_order
from tests.plan.test_share_plan import planned


def test_a_group_is_scheduled_where_its_first_member_was_planned() -> None:
    targets = "- name: a\n  kernel_name: x\n  share: 'off'\n" + "\n".join(
        f"- name: t{i}\n  kernel_name: k\n  launch_skip: {i}" for i in range(3)
    )
    invocations, shares = planned(targets)
    units = units_in_plan_order(invocations, shares)
    assert [u.name for u in units] == ["a", "shared/1"] and isinstance(units[1], SharedGroup)


def test_longest_first_uses_the_previous_times_and_keeps_plan_order_for_ties() -> None:
    targets = "\n".join(f"- name: t{i}\n  kernel_name: k{i}\n  share: 'off'" for i in range(4))
    invocations, shares = planned(targets)
    units = units_in_plan_order(invocations, shares)
    ordered = longest_first(units, {"t2": 30.0, "t0": 12.0})
    assert [u.name for u in ordered] == ["t2", "t0", "t1", "t3"]  # t1, t3: the same estimate


def test_previous_times_come_from_targets_that_ran_alone_and_ok(tmp_path: Path) -> None:
    manifest = {
        "targets": [
            {"name": "a", "status": "ok", "seconds": 9.5},
            {"name": "b", "status": "ok", "seconds": 0.7, "obtained": {"how": "shared"}},  # a split's time
            {"name": "c", "status": "timed_out", "seconds": 300},
        ]
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert previous_seconds(earlier_manifest(tmp_path)) == {"a": 9.5}
    (tmp_path / "manifest.json").write_text("{broken")
    assert previous_seconds(earlier_manifest(tmp_path)) == {}
    assert previous_seconds(earlier_manifest(tmp_path / "missing")) == {}
    (tmp_path / "manifest.json").write_text('{"targets": [{"name": "a", "status": "ok", "seconds": "x"}]}')
    assert previous_seconds(earlier_manifest(tmp_path)) == {}
