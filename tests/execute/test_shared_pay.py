"""Shared runs that pay on campaigns users write, end to end against the fake ncu: one
trace per pool, misses decided on it, members that would poison a union kept out or split off,
and groups formed by cost on the trace."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPORT, campaign_text, fake_env, load_manifest, logging_ncu, run_cli, target
from tests.execute.shared_campaigns import TRACE_TARGETS

pytestmark = pytest.mark.slow  # runs the CLI end to end

SHARING = TRACE_TARGETS  # five targets whose windows need the trace


def run(tmp_path: Path, targets: str, *extra: str, **env: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    campaign = tmp_path / "camp.yaml"
    campaign.write_text(campaign_text(targets))
    done = run_cli("run", str(campaign), "--out", "runs", *extra, cwd=tmp_path, env=fake_env(**env))
    return done, load_manifest(tmp_path / "runs")[1]


def how(manifest: dict[str, Any]) -> dict[str, str]:
    return {t["name"]: (t.get("obtained") or {}).get("how", "-") for t in manifest["targets"]}


def unions(manifest: dict[str, Any]) -> list[dict]:
    return [r for r in manifest["shared_runs"] if not r["name"].startswith("shared/trace-")]


def test_targets_that_match_nothing_are_decided_on_one_trace_without_runs_of_their_own(tmp_path: Path) -> None:
    misses = "- name: typo\n  kernel_name: rmsnrom_kernel\n- name: no_slash\n  nvtx_include: decode_step\n  kernel_name: rmsnorm_kernel\n"
    done, manifest = run(tmp_path, SHARING + misses)
    assert done.returncode == 1, done.stdout + done.stderr
    traces = [r for r in manifest["shared_runs"] if r["name"].startswith("shared/trace-")]
    assert len(traces) == 1 and len(traces[0]["attempts"]) == 1  # one trace, one pass
    for name in ("typo", "no_slash"):
        missed = target(manifest, name)
        assert missed["status"] == "no_kernels" and missed["attempts"] == [], missed
        assert missed["obtained"]["how"] == "trace" and "ran the application to its end" in missed["obtained"]["reason"]
    assert any("rmsnorm_kernel" in hint for hint in target(manifest, "typo")["diagnosis"])  # the closest name
    assert {how(manifest)[n] for n in ("rms-0", "rms-5", "gemm-1", "gemm-2", "mlp_rms")} == {"shared"}
    # --no-share still runs them on their own, to the same verdict
    alone, manifest = run(tmp_path, SHARING + misses, "--no-share")
    assert alone.returncode == 1
    assert target(manifest, "typo")["status"] == "no_kernels" and len(target(manifest, "typo")["attempts"]) == 1


def test_a_member_asking_for_a_section_the_installed_ncu_does_not_list_runs_alone(tmp_path: Path) -> None:
    bad = "- name: typo_section\n  kernel_name: rmsnorm_kernel\n  launch_skip: 2\n  sections: [SpeedOfLite]\n"
    done, manifest = run(tmp_path, SHARING + bad, XDG_CACHE_HOME=str(tmp_path / "cache"))
    assert done.returncode == 1
    culprit = target(manifest, "typo_section")
    assert culprit["status"] == "usage_error" and culprit["obtained"]["how"] == "alone"
    reason = culprit["obtained"]["reason"]
    assert (
        reason.startswith("validate refuses it (NCU009: section 'SpeedOfLite' is not listed")
        and not culprit["attempts"]
    )
    assert [r["status"] for r in unions(manifest)] == ["ok"]
    assert {how(manifest)[n] for n in ("rms-0", "rms-5", "gemm-1", "gemm-2", "mlp_rms")} == {"shared"}


def test_a_union_ncu_refuses_is_halved_until_the_member_at_fault_is_alone(tmp_path: Path) -> None:
    bad = "- name: typo_section\n  kernel_name: rmsnorm_kernel\n  launch_skip: 2\n  sections: [SpeedOfLite]\n"
    # What the installed ncu lists is unknown here, so the member joins the shared run and ncu refuses it.
    done, manifest = run(tmp_path, SHARING + bad, XDG_CACHE_HOME=str(tmp_path / "cache"), FAKE_NCU_NO_LISTINGS="1")
    assert done.returncode == 1, done.stdout + done.stderr
    statuses = [r["status"] for r in unions(manifest)]
    assert statuses[0] == "usage_error" and "ok" in statuses[1:]
    culprit = target(manifest, "typo_section")
    assert culprit["status"] == "usage_error" and culprit["obtained"]["how"] == "alone"
    others = [t for t in manifest["targets"] if t["name"] != "typo_section"]
    assert all(t["status"] == "ok" for t in others)
    assert sum(how(manifest)[t["name"]] == "shared" for t in others) >= 2  # not every member sent alone


FAR_APART = (
    "- name: early\n  kernel_name: rmsnorm_kernel\n  matrix:\n    launch_skip: [0, 1, 2]\n"
    "- name: late\n  kernel_name: rmsnorm_kernel\n  nvtx_include: decode_step/\n  matrix:\n    launch_skip: [40, 41, 42]\n"
)


def test_launches_far_apart_share_one_run_that_picks_them_by_invocation(tmp_path: Path) -> None:
    done, manifest = run(tmp_path, FAR_APART)
    assert done.returncode == 0, done.stdout + done.stderr
    (union,) = unions(manifest)
    assert sorted(union["members"]) == ["early-0", "early-1", "early-2", "late-40", "late-41", "late-42"]
    # rmsnorm's 1st-3rd launches and the 41st-43rd decode-step ones (42nd-44th of all): nothing between
    assert "--kernel-id '::rmsnorm_kernel:1|2|3|42|43|44' --launch-count 6" in union["shell_command"]
    assert set(how(manifest).values()) == {"shared"}


def test_without_picks_launches_far_apart_get_dense_groups_of_their_own(tmp_path: Path) -> None:
    # kernel_name_base: demangled: how --kernel-id numbers launches then was not measured, so windows
    # are contiguous, and two dense groups beat one wide one.
    demangled = FAR_APART.replace(
        "  kernel_name: rmsnorm_kernel\n", "  kernel_name: rmsnorm_kernel\n  kernel_name_base: demangled\n"
    )
    done, manifest = run(tmp_path, demangled)
    assert done.returncode == 0, done.stdout + done.stderr
    runs = unions(manifest)
    assert sorted(sorted(r["members"]) for r in runs) == [
        ["early-0", "early-1", "early-2"],
        ["late-40", "late-41", "late-42"],
    ]
    assert all(r["argv"].count("--launch-count") == 1 and "--kernel-id" not in r["argv"] for r in runs)
    assert max(int(r["argv"][r["argv"].index("--launch-count") + 1]) for r in runs) == 3  # dense windows
    assert set(how(manifest).values()) == {"shared"}


def test_a_trace_is_reused_in_a_dirty_tree_until_what_the_command_runs_changes(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("v1\n")
    (tmp_path / "camp.yaml").write_text(campaign_text(SHARING))
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "w"]):
        subprocess.run(["git", *command], cwd=tmp_path, check=True, capture_output=True)
    (tmp_path / "notes.txt").write_text("v2\n")  # a tracked change: the tree is dirty

    def traced() -> bool:
        done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env())
        assert done.returncode == 0, done.stdout + done.stderr
        shared = load_manifest(tmp_path / "runs")[1]["shared_runs"]
        return any(r["name"].startswith("shared/trace-") for r in shared)

    assert traced()
    assert not traced()  # the same tracked changes: the cached trace is reused
    (tmp_path / "notes.txt").write_text("v3\n")
    assert traced()  # other changes: traced again


@pytest.mark.versions
def test_plan_piped_into_bash_writes_the_reports_run_writes(tmp_path: Path) -> None:
    targets = (
        "- name: rms\n  kernel_name: rmsnorm_kernel\n  matrix:\n    launch_skip: [0, 1, 3]\n"  # one shared run
        "- name: counted\n  kernel_name: rmsnorm_kernel\n  launch_skip_before_match: 2\n"  # always alone
    )
    (tmp_path / "camp.yaml").write_text(campaign_text(targets))
    plan_dir = tmp_path / "plan-reports"
    script = run_cli("plan", "camp.yaml", "--report-dir", str(plan_dir), cwd=tmp_path, env=fake_env())
    assert script.returncode == 0, script.stderr
    bash = subprocess.run(
        ["bash", "-e"], input=script.stdout, cwd=tmp_path, env=fake_env(), capture_output=True, text=True
    )
    assert bash.returncode == 0, bash.stdout + bash.stderr
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env())
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = load_manifest(tmp_path / "runs")[0]
    assert sorted(p.name for p in plan_dir.glob(f"*{REPORT}")) == sorted(
        p.name for p in (run_dir / "reports").glob(f"*{REPORT}")
    )
    assert len(list(plan_dir.glob(f"*{REPORT}"))) == 4
    commands = [line for line in script.stdout.splitlines() if line and not line.startswith("#")]
    starts = [line for line in commands if " ncu " in f" {line}" and " --import " not in line]
    assert len(starts) == 2  # `counted` alone and the shared run, as run does: no target twice


def test_plan_of_a_trace_pool_runs_each_target_and_leaves_nothing_bash_cannot_run(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text(SHARING))
    script = run_cli("plan", "camp.yaml", "--report-dir", str(tmp_path / "r"), cwd=tmp_path, env=fake_env())
    commands = [line for line in script.stdout.splitlines() if line and not line.startswith("#")]
    assert not any("<from-the-trace>" in line for line in commands)
    members = yaml_names(SHARING)
    assert sum(" ncu " in f" {line}" for line in commands) == len(members)  # each target's own command
    assert any(line.startswith("# ") and "ncucampaign run would share" in line for line in script.stdout.splitlines())
    bash = subprocess.run(
        ["bash", "-e"], input=script.stdout, cwd=tmp_path, env=fake_env(), capture_output=True, text=True
    )
    assert bash.returncode == 0, bash.stdout + bash.stderr
    assert sorted(p.name for p in (tmp_path / "r").glob(f"*{REPORT}")) == sorted(f"{m}{REPORT}" for m in members)


def yaml_names(targets: str) -> list[str]:
    """The expanded target names of a targets block (a matrix of launch_skip gives name-0, name-5)."""
    from ncucampaign.plan.expand import build_plan
    from ncucampaign.spec.loader import parse_campaign

    return [inv.name for inv in build_plan(parse_campaign(campaign_text(targets), Path("camp.yaml"))).invocations]


def test_the_trace_is_listed_once_per_distinct_filter(tmp_path: Path) -> None:
    """Members with the same filters (a launch_skip matrix) need one listing of the trace, not one
    each: on the H200 every `ncu --import` costs 0.6-0.9 s of the shared run's critical path."""
    calls, wrapper = logging_ncu(tmp_path / "ncu-bin")
    done, manifest = run(tmp_path, SHARING.replace("[0, 5]", "[0, 1, 2, 3, 5]"), NCUCAMPAIGN_NCU=str(wrapper))
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(how(manifest).values()) == {"shared"}
    trace = Path(unions(manifest)[0]["trace"]["report"]).name
    listings = [line for line in calls.read_text().splitlines() if line.startswith("--import") and trace in line]
    assert listings and len(listings) == len(set(listings)), "\n".join(sorted(listings))
    # what the union runs took is kept beside the cached trace, for the next run's partition
    (side,) = [p for p in (tmp_path / "runs" / ".cache" / "traces").glob("*.json") if ".listings." not in p.name]
    assert len(json.loads(side.read_text())["runs"]) == len(unions(manifest))


def trace_listings(calls: Path) -> list[str]:
    """The `ncu --import` listings of a discovery trace the log holds (then empties it)."""
    lines = calls.read_text().splitlines() if calls.exists() else []
    calls.unlink(missing_ok=True)
    traces = ("/.cache/traces/", "/trace-")  # the cache's, and this run's own before it is cached
    return [
        line
        for line in lines
        if line.startswith("--import") and "--page raw" in line and any(t in line for t in traces)
    ]


def test_a_cached_trace_is_not_listed_again_and_a_damaged_listing_is_made_anew(tmp_path: Path) -> None:
    """Each listing of a trace costs 0.6-0.9 s on the H200 on every run that reuses the trace; what
    ncu listed is kept beside it. Kept listings that are damaged, or of another file, are listed again."""
    calls, wrapper = logging_ncu(tmp_path.parent / f"{tmp_path.name}-ncu")
    campaign = tmp_path / "camp.yaml"
    campaign.write_text(campaign_text(SHARING))  # once: the workload the trace is kept for stays the same

    def again() -> dict[str, Any]:
        done = run_cli("run", str(campaign), "--out", "runs", cwd=tmp_path, env=fake_env(NCUCAMPAIGN_NCU=str(wrapper)))
        assert done.returncode == 0, done.stdout + done.stderr
        return load_manifest(tmp_path / "runs")[1]

    def results(manifest: dict[str, Any]) -> dict[str, list[tuple]]:
        return {t["name"]: [(r["mangled"], r["grid"], r["nvtx"]) for r in t["results"]] for t in manifest["targets"]}

    manifest = again()
    assert trace_listings(calls)
    (kept,) = (tmp_path / "runs" / ".cache" / "traces").glob("*.listings.json")

    reused = again()
    assert unions(reused)[0]["trace"]["reused"] is True
    assert trace_listings(calls) == []
    assert how(reused) == how(manifest) and set(how(reused).values()) == {"shared"}
    assert results(reused) == results(manifest)

    data = json.loads(kept.read_text())
    data["listings"] = [[words, rows[:-1]] for words, rows in data["listings"]]  # a launch lost from each
    for damaged in (json.dumps(data), '{"stamp": [1, 2', "[]"):
        kept.write_text(damaged)
        listed = again()
        assert trace_listings(calls), damaged[:40]
        assert how(listed) == how(manifest) and results(listed) == results(manifest)
        assert json.loads(kept.read_text())["stamp"] == data["stamp"]  # listed anew and kept


def test_a_miss_decided_on_the_trace_is_diagnosed_as_its_own_run_would_be(tmp_path: Path) -> None:
    # the kernel ran, but never that far: the trace connected and listed kernels, so neither diagnosis
    # may say that ncu never connected
    far = "- name: too_far\n  kernel_name: rmsnorm_kernel\n  launch_skip: 9999\n"
    done, manifest = run(tmp_path, SHARING + far)
    assert done.returncode == 1, done.stdout + done.stderr
    shared = target(manifest, "too_far")
    assert shared["obtained"]["how"] == "trace", shared
    alone, manifest = run(tmp_path, SHARING + far, "--no-share")
    assert alone.returncode == 1
    own = target(manifest, "too_far")
    assert own["status"] == shared["status"] == "no_kernels"
    assert not any("never connected" in hint for hint in shared["diagnosis"] + own["diagnosis"])
    assert any("launch_skip 9999" in hint for hint in own["diagnosis"])
    # the trace knows more than a console: how many launches the filters match
    assert shared["diagnosis"] == [
        "launch_skip 9999 is past the end: its filters match 49 launches in the discovery trace (launch_skip 0 to 48 "
        "profile one of them)"
    ], shared["diagnosis"]


def union_groups(manifest: dict[str, Any]) -> list[list[str]]:
    return sorted(sorted(r["members"]) for r in unions(manifest) if r.get("kind", "union") == "union")


def test_cached_runs_hold_their_groups_still_and_keep_what_was_measured_cheapest(tmp_path: Path) -> None:
    """Before the fix: each cached run refitted its costs and chose other groups. The groups a run measured are
    kept beside the trace; a cached run holds to them unless its own are priced below what they took."""
    spread = SHARING + "- name: late_rms\n  kernel_name: rmsnorm_kernel\n  launch_skip: 40\n"
    (tmp_path / "camp.yaml").write_text(campaign_text(spread))  # once: the workload's folder stays as it is

    def cached_run() -> dict[str, Any]:
        done = run_cli(
            "run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env(FAKE_NCU_SECONDS_PER_KERNEL="0.05")
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return load_manifest(tmp_path / "runs")[1]

    cached_run()  # the trace first
    chosen = [union_groups(cached_run()) for _ in range(3)]
    assert chosen[0] == chosen[1] == chosen[2], chosen  # three cached runs, the same groups
    (side,) = [p for p in (tmp_path / "runs" / ".cache" / "traces").glob("*.json") if '"partition"' in p.read_text()]
    data = json.loads(side.read_text())
    members = sorted(name for group in data["partition"]["groups"] for name in group)
    kept = [members[:2], members[2:]]  # groups of the same members, measured cheaper than anything is priced
    data["partition"] = {"groups": kept, "measured_s": 0.001}
    side.write_text(json.dumps(data))
    assert union_groups(cached_run()) == sorted(sorted(group) for group in kept)


def test_the_limit_lines_start_is_the_trace_less_its_traced_launches_never_its_whole_seconds(tmp_path: Path) -> None:
    # Each launch the fake profiles takes 30 ms, so the trace's seconds are mostly its traced launches:
    # a line that took them for the start would print the trace's seconds.
    done, manifest = run(tmp_path, FAR_APART, FAKE_NCU_SECONDS_PER_KERNEL="0.03")
    assert done.returncode == 0, done.stdout + done.stderr
    (trace,) = [r for r in manifest["shared_runs"] if r["kind"] == "trace"]
    traced, price = trace["report"]["results"], trace["launch_s"]
    assert traced > 40 and price > 0
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("floor:")]
    start = f"one application start {trace['seconds'] - traced * price:.1f} s: the discovery trace by ncu, "
    assert start + f"less its {traced} traced launches at {price * 1000:.1f} ms each" in line, line
    assert f"one application start {trace['seconds']:.1f} s" not in line


def test_a_miss_decided_on_a_union_gives_the_unions_count_never_that_ncu_did_not_connect(tmp_path: Path) -> None:
    """Round 7, item 11: a member of a union of identical filters whose skip lay past the application's launches
    was told 'ncu never connected to a CUDA process', while the union's log showed it connected and profiled."""
    same = "- name: m_{launch_skip}\n  nvtx_include: decode_step/\n  kernel_name: rmsnorm_kernel\n  launch_count: 3\n"
    same += "  matrix:\n    launch_skip: [0, 2, 4, 30]\n  args: [--steps, '4']\n"
    done, manifest = run(tmp_path, same)
    assert done.returncode == 1, done.stdout + done.stderr
    far = target(manifest, "m_30")
    assert far["status"] == "no_kernels" and far["obtained"]["how"] == "shared", far
    assert not any("never connected" in hint for hint in far["diagnosis"]), far["diagnosis"]
    assert any("launch_skip 30 lies past them" in hint for hint in far["diagnosis"]), far["diagnosis"]


def test_an_nvtx_typo_on_a_target_that_runs_alone_names_the_range_it_meant(tmp_path: Path) -> None:
    """Round 7, item 11: a target alone (share: off) whose nvtx_include misspelt a range got the thread-scope hint;
    the ranges this run's results ran in name the one it meant, as a trace-decided miss's hints do."""
    targets = (
        "- name: good\n  nvtx_include: decode_step/\n  kernel_name: rmsnorm_kernel\n  share: 'off'\n"
        "- name: typo\n  nvtx_include: decode_stpe/\n  kernel_name: rmsnorm_kernel\n  share: 'off'\n"
    )
    done, manifest = run(tmp_path, targets, "--gpus", "0", FAKE_NCU_FIXTURE="nvtx_nested")  # results with ranges
    assert done.returncode == 1, done.stdout + done.stderr
    typo = target(manifest, "typo")
    assert typo["status"] == "no_kernels" and typo["obtained"]["how"] == "alone", typo
    assert typo["diagnosis"] and "did you mean 'decode_step/'" in typo["diagnosis"][0], typo["diagnosis"]
    assert not any("per thread" in hint for hint in typo["diagnosis"])
