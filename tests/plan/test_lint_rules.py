"""Each lint rule: one campaign that triggers it and one that does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncucampaign.plan.expand import build_plan
from ncucampaign.plan.lint import lint_plan, start_questions
from ncucampaign.plan.start_checks import Facts, Kind, Questions
from ncucampaign.spec.loader import parse_campaign
from ncucampaign.spec.ncu_catalog import InstalledNcu, known_options, parse_listing

APP = "application:\n  command: python3 bench.py\ntargets:\n"
INSTALLED = InstalledNcu("2025.3.1.0", frozenset({"SpeedOfLight", "LaunchStats"}), frozenset({"basic", "full"}))


def only_bench(asked: Questions) -> Facts:
    """A machine holding the program bench.py alone, every program on PATH and every module."""
    kinds: dict[Path, Kind] = {
        path: "program" if path.name == "bench.py" else "folder" if path.suffix == "" else "missing"
        for path in asked.kinds
    }
    return Facts(kinds, dict.fromkeys(asked.programs, True), dict.fromkeys(asked.modules, True))


def codes(targets: str, installed: InstalledNcu | None = None) -> list[str]:
    loaded = parse_campaign(APP + targets, Path("camp.yaml"))
    plan = build_plan(loaded)
    return [w.code for w in lint_plan(loaded, plan, installed, only_bench(start_questions(loaded, plan)))]


CASES = {
    "NCU001": ("  - name: a\n    nvtx_include: decode_step\n", "  - name: a\n    nvtx_include: decode_step/\n"),
    "NCU002": ("  - name: a\n    nvtx_include: layer*/\n", "  - name: a\n    nvtx_include: 'decode/*/layer/'\n"),
    "NCU003": (
        "  - name: a\n    range_filter: '::8'\n",
        "  - name: a\n    nvtx_include: s/\n    range_filter: '::8'\n",
    ),
    "NCU004": ("  - name: a\n    set: full\n", "  - name: a\n    set: full\n    launch_count: 1\n"),
    "NCU005": ("  - name: a\n    kernel_name: 'regex:(flash'\n", "  - name: a\n    kernel_name: 'regex:(flash)'\n"),
    "NCU006": ("  - name: a\n    nvtx_include: 'regex:a{1,3}/'\n", "  - name: a\n    nvtx_include: 'regex:a+/'\n"),
    "NCU007": (
        "  - name: a\n    launch_skip: 3\n    matrix: {kernel_name: [x, y]}\n",
        "  - name: a\n    launch_skip: 3\n    matrix: {set: [basic, full]}\n    launch_count: 1\n",
    ),
    "NCU008": ("  - name: a\n    python_include: f.py@g\n", "  - name: a\n    native_include: g\n"),
    "NCU009": ("  - name: a\n    sections: [SpeedOfLite]\n", "  - name: a\n    sections: [SpeedOfLight]\n"),
    "NCU010": ("  - name: a\n    kill: true\n", "  - name: a\n    kill: true\n    launch_count: 1\n"),
    "NCU011": (
        "  - name: a\n    command: torchrun --nproc_per_node=2 b.py\n    target_processes: all\n",
        "  - name: a\n    command: torchrun --nproc_per_node=2 b.py\n    target_processes: all\n"
        "    kernel_name: regex:nvjet\n",
    ),
    "NCU012": (
        "  - name: a\n    communicator: shmem\n    communicator_shmem_num_peers: 2\n",
        "  - name: a\n    extra_args: [--import-sass, 'no']\n",
    ),
    "NCU014": ("  - name: a\n    kernel_name: 'regex:" + "(" * 500 + "a" + ")" * 500 + "'\n", "  - name: a\n"),
    "NCU013": ("  - name: a\n    command: python3 -u other.py\n", "  - name: a\n    command: ./bench.py --steps 2\n"),
}


def test_every_rule_is_covered() -> None:
    from ncucampaign.plan.lint_rules import RULES

    assert set(CASES) == set(RULES)


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_triggers(code: str) -> None:
    assert code in codes(CASES[code][0], INSTALLED)


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_stays_quiet(code: str) -> None:
    assert code not in codes(CASES[code][1], INSTALLED)


def test_lint_ignore_silences_a_rule_per_target_or_for_all() -> None:
    assert codes("  - name: a\n    nvtx_include: decode_step\n    lint_ignore: [NCU001]\n") == []
    loaded = parse_campaign(
        "application:\n  command: x\ndefaults:\n  lint_ignore: NCU008\ntargets:\n  - name: a\n    python_include: g\n",
        Path("camp.yaml"),
    )
    assert lint_plan(loaded, build_plan(loaded)) == []


def test_unknown_set_needs_an_installed_ncu() -> None:
    assert "NCU009" not in codes("  - name: a\n    set: fulll\n    launch_count: 1\n")
    assert "NCU009" in codes("  - name: a\n    set: fulll\n    launch_count: 1\n", INSTALLED)


def test_an_option_a_later_ncu_added_is_checked_against_the_installed_one() -> None:
    """--metric-distribution-groups came with ncu 2026.1: on 2025.3.1 it is named with the release that has it; on
    2026.1 it is fine; an installed ncu whose --help lacks an option is believed over the table."""
    campaign = "  - name: a\n    extra_args: [--metric-distribution-groups, '2']\n"
    assert "NCU012" not in codes(campaign)  # no installed ncu: accepted, as any release this tool knows
    assert "NCU012" in codes(campaign, INSTALLED)
    newer = InstalledNcu("2026.1.0.0", INSTALLED.sections, INSTALLED.sets)
    assert "NCU012" not in codes(campaign, newer)
    flags = frozenset(
        flag for flag in known_options() if flag.startswith("--") and flag != "--metric-distribution-groups"
    )
    listed = InstalledNcu("2026.1.0.0", INSTALLED.sections, INSTALLED.sets, flags)
    loaded = parse_campaign(APP + campaign, Path("camp.yaml"))
    (warning,) = [w for w in lint_plan(loaded, build_plan(loaded), listed) if w.code == "NCU012"]
    assert "does not list it in --help" in warning.message


def test_warning_is_located_and_rendered() -> None:
    loaded = parse_campaign(APP + "  - name: a\n    nvtx_include: [x/, decode_step]\n", Path("camp.yaml"))
    (warning,) = lint_plan(loaded, build_plan(loaded))
    assert warning.render("camp.yaml").startswith(
        "camp.yaml:5: warning NCU001 targets[0].nvtx_include[1]: 'decode_step' has no trailing '/'"
    )


def test_an_expanded_target_warns_once() -> None:
    assert codes(
        "  - name: a\n    nvtx_include: decode_step\n    launch_count: 1\n    matrix: {set: [basic, full]}\n"
    ) == ["NCU001"]


def test_listing_parser_reads_real_ncu_output() -> None:
    shared = Path(__file__).resolve().parents[1] / "fixtures"
    sets = parse_listing((shared / "list-sets.txt").read_text())
    assert sets == {"basic", "detailed", "full", "nvlink", "pmsampling", "roofline"}
    assert "SpeedOfLight" in parse_listing((shared / "list-sections.txt").read_text())


def test_a_collective_only_filter_is_told_what_each_ncu_can_do() -> None:
    """No replay mode of ncu 2025.3.1 profiled the all-reduce of a 2-rank job (H200 x2); 2026.1 added
    the communicator keys (never offered app-range, which failed there)."""
    campaign = (
        "  - name: a\n    command: torchrun --nproc_per_node=2 b.py\n    target_processes: all\n"
        "    kernel_name: regex:nccl\n"
    )
    loaded = parse_campaign(APP + campaign, Path("camp.yaml"))

    def message(installed: InstalledNcu) -> str:
        return next(w.message for w in lint_plan(loaded, build_plan(loaded), installed) if w.code == "NCU011")

    assert "profiled them in no replay mode" in message(INSTALLED) and "app-range" not in message(INSTALLED)
    newer = InstalledNcu("2026.1.0.0", INSTALLED.sections, INSTALLED.sets)
    assert "communicator: shmem, communicator_shmem_num_peers" in message(newer)
