"""plan/share/partition.py: the members of a trace pool grouped by estimated cost. Pure."""

from __future__ import annotations

import dataclasses
import itertools
import random
import statistics
from pathlib import Path

import pytest

from ncucampaign.plan.share.cost import Costs
from ncucampaign.plan.share.partition import EXACT_MEMBERS, partition
from ncucampaign.plan.share.pricing import Placed, group_cost
from tests.conftest import invocation

BASE = invocation(kernel_name="k", launch_count=1, sections=("SpeedOfLight",))


def placed(name: str, kernel: str, selected: range | list[int], skip: int, count: int = 1, **options: object) -> Placed:
    ids = tuple(selected)
    member = dataclasses.replace(
        BASE,
        name=name,
        options=BASE.options.model_copy(
            update={"kernel_name": kernel, "launch_skip": skip, "launch_count": count, **options}
        ),
    )
    return Placed(member, ids, ids[skip : skip + count])


def set_partitions(items: list[Placed]):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partial in set_partitions(rest):
        yield [[first], *partial]
        for index in range(len(partial)):
            yield [*partial[:index], [first, *partial[index]], *partial[index + 1 :]]


def total(groups: list[list[Placed]]) -> float:
    return sum(group_cost(group) for group in groups)


def names(groups: list[list[Placed]]) -> list[list[str]]:
    return [[p.member.name for p in group] for group in groups]


@pytest.mark.parametrize("seed", range(12))
def test_the_partition_is_the_brute_force_optimum_on_small_cases(seed: int) -> None:
    rng = random.Random(seed)
    trace = 200  # launch IDs 0..199; each kernel family every n-th launch
    families = {"rms": range(0, trace, 3), "gemm": range(1, trace, 5), "attn": range(2, trace, 7)}
    members = []
    for index in range(rng.randint(2, 7)):
        kernel = rng.choice(list(families))
        ids = list(families[kernel])
        options = {"section_set": "full"} if rng.random() < 0.15 else {}
        members.append(placed(f"m{index}", kernel, ids, rng.randrange(len(ids) - 3), rng.choice([1, 1, 2]), **options))
    best = min(total(candidate) for candidate in set_partitions(members))
    assert total(partition(members)) == pytest.approx(best)


def test_small_dense_groups_beat_one_wide_one() -> None:
    rms = range(0, 400, 2)  # 200 rmsnorm launches
    early = [placed(f"early{s}", "rms", rms, s) for s in (0, 1, 2)]
    late = [placed(f"late{s}", "rms", rms, s) for s in (180, 181, 182)]
    assert names(partition(early + late)) == [["early0", "early1", "early2"], ["late180", "late181", "late182"]]


def test_a_member_far_from_the_others_runs_alone() -> None:
    rms = range(0, 400, 2)
    members = [placed(f"m{s}", "rms", rms, s) for s in (0, 1, 2, 3)] + [placed("far", "rms", rms, 150)]
    groups = names(partition(members))
    assert ["far"] in groups and ["m0", "m1", "m2", "m3"] in groups


@pytest.mark.parametrize("cheap", [5, 12])  # the exact search, and the contiguous split improved
def test_a_full_set_member_stays_out_of_a_window_it_would_make_dear(cheap: int) -> None:
    rms = range(0, 400, 2)
    members = [placed(f"m{s}", "rms", rms, s) for s in range(0, 4 * cheap, 4)]  # every 4th launch
    members.append(placed("full", "rms", rms, 4 * (cheap // 2), section_set="full"))  # amid them
    groups = names(partition(members))
    assert ["full"] in groups and len(groups) == 2


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_many_members_take_the_best_contiguous_split() -> None:
    rms = range(0, 2000, 2)
    members = [placed(f"a{s}", "rms", rms, s) for s in range(0, 12)] + [
        placed(f"b{s}", "rms", rms, 900 + s) for s in range(12)
    ]
    assert len(members) > EXACT_MEMBERS
    groups = names(partition(members))
    assert groups == [[f"a{s}" for s in range(12)], [f"b{s}" for s in range(12)]]
    # ...and no split of the launch order into consecutive runs is cheaper
    found = total(partition(members))
    order = sorted(members, key=lambda p: p.wanted[0])
    for cut in range(1, len(order)):
        assert found <= total([order[:cut], order[cut:]]) + 1e-9
    for a, b in itertools.combinations(range(1, len(order)), 2):
        assert found <= total([order[:a], order[a:b], order[b:]]) + 1e-9


def with_parts(p: Placed, kernels: range | list[int], scope: range | list[int] | None, family: str) -> Placed:
    return dataclasses.replace(
        p, kernels=frozenset(kernels), scope=frozenset(scope) if scope is not None else None, family=(family,)
    )


def test_a_unions_window_counts_what_its_or_ed_filters_select_not_only_the_members_own() -> None:
    # Launch IDs 0..99: rmsnorm on even IDs, gemm on odd ones; ranges: mlp for IDs < 50, attention after.
    rms, gemm, mlp, attention = range(0, 100, 2), range(1, 100, 2), range(50), range(50, 100)
    a = with_parts(placed("a", "rms", [i for i in rms if i < 50], 0), rms, mlp, "a")  # rmsnorm in mlp: ID 0
    b = with_parts(placed("b", "gemm", [i for i in gemm if i >= 50], 10), gemm, attention, "b")  # ID 71
    own = dataclasses.replace(a, kernels=None), dataclasses.replace(b, kernels=None)
    # The members' own selections hold 25 + 11 launches in 0..71; the union (rms|gemm within mlp|attention)
    # selects every launch there: 72.
    assert group_cost([a, b]) - group_cost(list(own)) == pytest.approx((72 - 36) * 0.4)


@pytest.mark.parametrize("seed", range(4))
def test_many_members_cost_no_more_than_all_together_each_family_together_or_each_alone(seed: int) -> None:
    rng = random.Random(seed)
    families = {"r": range(0, 1000, 3), "g": range(1, 1000, 3), "a": range(2, 1000, 6)}
    members = []
    for index in range(rng.randint(EXACT_MEMBERS + 1, 24)):
        family = rng.choice(list(families))
        ids = families[family]
        members.append(with_parts(placed(f"m{index}", family, ids, rng.randrange(60)), ids, None, family))
    found = total(partition(members))
    by_family: dict[str, list[Placed]] = {}
    for member in members:
        by_family.setdefault(member.family[0], []).append(member)  # type: ignore[index]
    assert found <= total([members]) + 1e-9
    assert found <= total(list(by_family.values())) + 1e-9
    assert found <= total([[m] for m in members]) + 1e-9


def test_sections_that_cost_no_passes_of_their_own_do_not_split_a_dense_group() -> None:
    """shared.yaml's sections matrix (LaunchStats, Occupancy, SchedulerStats next to SpeedOfLight):
    on the H200 27 launches with all four took 16.6 s, 12 with SpeedOfLight alone 11.3 s, so one group
    is right where pricing every extra section as a replay split it into two."""
    rms = range(0, 40)
    plain = [placed(f"rms{s}", "rms", rms, s) for s in range(0, 24)]
    matrix = [
        placed(f"third_{extra}", "rms", rms, 2, sections=("SpeedOfLight", extra))
        for extra in ("LaunchStats", "Occupancy", "SchedulerStats")
    ]
    measured = Costs(start_s=6.0)  # the start calibrated on the H200 (6-8 s)
    assert len(partition(plain + matrix, measured)) == 1
    dear = [placed(f"third_{extra}", "rms", rms, 2, sections=("SpeedOfLight", extra)) for extra in ("A", "B", "C")]
    assert len(partition(plain + dear, measured)) > 1  # sections with passes of their own still add theirs


def test_costs_are_fitted_to_the_union_runs_this_machine_measured() -> None:
    """On an H200 x2 (shared.yaml): a 27-launch group took 14.8 s, a 5-launch group 8.2 s (SpeedOfLight
    and near-free sections, priced 0.43 s a launch): a start of about 6 s and replay three quarters
    of its price. A start fitted to one run alone (3 s) had split the next run into two dearer groups."""
    from ncucampaign.plan.share.cost import TRACED_LAUNCH_S, calibrated

    assert calibrated(7.5, 270 * TRACED_LAUNCH_S, None).start_s == pytest.approx(
        7.5 - 270 * TRACED_LAUNCH_S
    )  # the trace's estimate
    fitted = calibrated(7.5, 270 * TRACED_LAUNCH_S, None, [(14.8, 27 * 0.43), (8.2, 5 * 0.43)])
    assert fitted.start_s == pytest.approx(6.7, abs=0.1) and fitted.replay_scale == pytest.approx(0.7, abs=0.05)
    one = calibrated(12.8, 170 * TRACED_LAUNCH_S, None, [(14.8, 27 * 0.43)])
    assert one.start_s == pytest.approx(12.8 - 170 * TRACED_LAUNCH_S)  # more than 14.8 - 11.6: the trace's estimate
    assert calibrated(None, 0, None).start_s == Costs().start_s  # nothing measured: the first guess
    rms = range(0, 40)
    members = [placed(f"rms{s}", "rms", rms, s) for s in range(0, 24)] + [placed("late", "rms", rms, 30)]
    assert len(partition(members, fitted)) == 1  # the late one is worth its 6 more launches at this price
    assert len(partition(members, Costs(start_s=2.0))) == 2  # at a 2 s start (the trace's, once) it was not


def test_a_slope_is_fitted_only_over_union_sizes_spread_apart() -> None:
    """Before the fix: unions of 18 and 11 launches (priced 7.7 and 4.7 s) fitted a new scale with every run,
    and the partition followed it (2 unions, then 1, then 3)."""
    from ncucampaign.plan.share.cost import TRACED_LAUNCH_S, calibrated, spread_enough

    near = [(17.0, 7.7), (12.1, 4.7)]
    assert not spread_enough(near)
    kept = calibrated(9.0, 200 * TRACED_LAUNCH_S, None, near)
    assert kept.replay_scale == 1.0 and kept.start_s == pytest.approx(statistics.median([17.0 - 7.7, 12.1 - 4.7]))
    assert calibrated(9.0, 200 * TRACED_LAUNCH_S, None, [*near, (18.5, 9.0)]).replay_scale == 1.0  # still within 2x
    apart = [(14.8, 27 * 0.43), (8.2, 5 * 0.43)]
    assert spread_enough(apart) and calibrated(9.0, 200 * TRACED_LAUNCH_S, None, apart).replay_scale != 1.0


def test_the_price_list_lives_in_one_module_and_the_veto_prices_as_the_partition_does() -> None:
    """A group's price was written four times, and the run's veto used the fixed table on a partition
    made with this machine's calibrated costs: no module but cost.py sets a price or adds to a start
    (others may use its prices by name)."""
    from ncucampaign.plan.share import cost

    prices = ("APP_START_S", "SPLIT_S", "TRACE_S", "PER_LAUNCH_S", "SECTION_S", "METRICS_ONLY_S", "TRACED_LAUNCH_S")
    names = (*(f"{name} =" for name in prices), "start_s +")
    package = Path(cost.__file__).parents[2]
    naming = sorted(
        str(path.relative_to(package.parent))
        for path in package.rglob("*.py")
        if any(name in path.read_text() for name in names)
    )
    assert naming == ["ncucampaign/plan/share/cost.py"], naming
    members = [invocation(f"m{i}", launch_skip=40 * i, launch_count=1) for i in range(2)]
    cheap_replay = Costs(replay_scale=0.25)  # as fitted on a machine whose replay is a quarter the table's
    assert not cost.pays(members, "trace", 80) and cost.pays(members, "trace", 80, cheap_replay)
    placed = [Placed(m, tuple(range(80)), (40 * i,)) for i, m in enumerate(members)]
    assert group_cost(placed, cheap_replay) == pytest.approx(cost.group_s(members, "trace", 41, cheap_replay))  # 0..40


def test_a_partition_holds_still_unless_new_groups_are_priced_below_what_the_kept_ones_measured() -> None:
    """Before the fix: each cached run chose other groups (2 unions, then 1, then 3) as its refitted costs
    moved; a cached run never picks groups priced above what the kept ones measured."""
    from ncucampaign.plan.share.partition import KeptPartition, held_still

    rms = range(0, 40)
    members = [placed(f"rms{s}", "rms", rms, s) for s in (0, 1, 2, 30, 31, 32)]
    costs = Costs(start_s=8.0)
    found = partition(members, costs)
    assert len(found) == 2  # two dense unions of 3 launches each, at a start of 8 s
    priced = sum(group_cost(group, costs) for group in found)
    one = (tuple(p.member.name for p in members),)  # what an earlier run chose: one union of 33 launches
    held = held_still(found, KeptPartition(one, measured_s=priced - 1.0), costs)  # and it measured less
    assert [[p.member.name for p in group] for group in held] == [list(one[0])]
    assert held_still(found, KeptPartition(one, measured_s=priced + 1.0), costs) == found  # priced below it
    other = KeptPartition((("rms0",), ("rms1", "rms2")), measured_s=1.0)  # other members: the campaign changed
    assert held_still(found, other, costs) == found
    assert held_still(found, None) == found


def test_members_that_set_an_environment_are_partitioned_as_the_others() -> None:
    """The exact partition prices each distinct union once, told apart by the members' options; `env:` (a mapping)
    is one of them, and the groups are still the cheapest that group_cost alone prices."""
    env = {"env": {"TORCH_LOGS": "+dynamo"}}
    members = [placed(f"m{i}", "k", range(0, 60, 3), skip, **env) for i, skip in enumerate((0, 3, 9, 15))]
    members.append(placed("other", "k", range(0, 60, 3), 4, env={"TORCH_LOGS": "-dynamo"}))
    assert total(partition(members)) == pytest.approx(min(total(groups) for groups in set_partitions(members)))
