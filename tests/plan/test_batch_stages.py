"""A run handed to a batch system as submissions (plan/units.py's `submissions`, pure): every unit a task, a trace
pool's first task among them, and the pool's second stage (one task per union at the fewest, and one more) after
that task, in submissions of their own where the system can hold them back, else after it in the same ones."""

from __future__ import annotations

from ncucampaign.plan.units import TRACE, UNIONS, submissions, units_in_plan_order
from tests.plan.test_share_plan import planned

ALONE = "- name: apart\n  kernel_name: rmsnorm_kernel\n  share: 'off'\n"


def pool(size: int, count: int = 1) -> str:
    """`size` targets of two filters: one trace pool."""
    return "\n".join(
        f"- name: p{i}\n  kernel_name: {'rmsnorm_kernel' if i % 2 else 'regex:nvjet'}\n  launch_skip: {i}\n"
        f"  launch_count: {count}"
        for i in range(size)
    )


def test_a_pools_second_stage_is_a_submission_after_its_first_task_where_the_system_holds_back() -> None:
    invocations, shares = planned(ALONE + pool(8, count=100))
    first, second = submissions(units_in_plan_order(invocations, shares), 1000, 1)
    assert [task.stage for task in first.tasks] == [None, TRACE]
    assert first.tasks[1].names == tuple(f"p{i}" for i in range(8)) and first.roles[1] == ("p1.1", TRACE)
    assert first.roles[0] is None and not first.after
    assert len(second.tasks) == 5  # 800 wanted launches: four unions at the fewest, and one more
    assert all(task.stage == UNIONS and not task.names for task in second.tasks)
    assert set(second.roles) == {("p1.1", UNIONS)} and second.after == ((1, 1),) and second.number == 2


def test_a_system_that_cannot_hold_back_has_both_stages_in_one_submission() -> None:
    invocations, shares = planned(ALONE + pool(8, count=100))
    (one,) = submissions(units_in_plan_order(invocations, shares), 1 << 30, 3, holds_back=False)
    assert [task.stage for task in one.tasks] == [None, TRACE, *[UNIONS] * 5]
    assert one.roles[1] == ("p3.1", TRACE) and set(one.roles[2:]) == {("p3.1", UNIONS)} and not one.after


def test_submissions_hold_at_most_what_the_system_takes_and_name_the_pool_by_its_first_tasks_place() -> None:
    invocations, shares = planned(ALONE * 1 + pool(600))
    planned_submissions = submissions(units_in_plan_order(invocations, shares), 2, 1)
    assert [len(s.tasks) for s in planned_submissions] == [2, 2, 2]  # 2 first-stage tasks; 4 of the second stage
    assert planned_submissions[0].roles == (None, ("p1.1", TRACE))
    assert all(s.after == ((1, 1),) for s in planned_submissions[1:])


def test_without_a_trace_pool_there_is_no_second_stage() -> None:
    invocations, shares = planned("- name: a\n  kernel_name: rmsnorm_kernel\n" + ALONE)
    (only,) = submissions(units_in_plan_order(invocations, shares), 1000, 1)
    assert all(task.stage is None for task in only.tasks) and only.roles == (None, None)
