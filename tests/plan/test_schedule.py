"""Scheduling units: plan order, longest first by the previous run's times, and reading those times."""

from __future__ import annotations

from pathlib import Path

from ncucampaign.execute.prepare import earlier_manifest, previous_seconds
from ncucampaign.execute.rundir.manifest import Obtained
from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.share.groups import SharedGroup
from ncucampaign.plan.units import longest_first, units_in_plan_order
from tests.manifests import manifest_with, target_record
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
    manifest = manifest_with(
        [
            target_record("a", seconds=9.5),
            target_record("b", seconds=0.7, obtained=Obtained(how="shared", shared_run="shared/1")),  # a split's time
            target_record("c", Status.TIMED_OUT, seconds=300),
        ]
    )
    (tmp_path / "manifest.json").write_text(manifest.model_dump_json())
    assert previous_seconds(earlier_manifest(tmp_path)) == {"a": 9.5}
    (tmp_path / "manifest.json").write_text("{broken")  # a new run does not need it: no times, no error
    assert previous_seconds(earlier_manifest(tmp_path)) == {}
    assert previous_seconds(earlier_manifest(tmp_path / "missing")) == {}
    (tmp_path / "manifest.json").write_text('{"targets": [{"name": "a", "status": "ok", "seconds": "x"}]}')
    assert previous_seconds(earlier_manifest(tmp_path)) == {}
