"""The discovery trace by Nsight Systems end to end, against the fake nsys (tests/fake_nsys) and the fake
ncu: it stands in for ncu's trace with the same union and the same splits, and whatever keeps it from
doing so (no nsys, an importer that cannot load, a failed step, launches it cannot order, a filter only
ncu applies) leaves the run to ncu's trace, with the reason in the trace's log."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ncucampaign.execute.process.short import as_shown
from ncucampaign.execute.trace.by_nsys import NsysTools, bundled_nsys, find_nsys, importer_problem
from tests.conftest import FAKE_NCU_DIR, FIXTURES, campaign_text, fake_env, load_manifest, logging_ncu, run_cli, target
from tests.execute.shared_campaigns import NSYS, TRACE_TARGETS, obtained, profiled_launch

TRACE_METRIC = "--metrics gpu__time_duration.sum"  # what only ncu's trace collects
slow = pytest.mark.slow  # runs the CLI end to end


def run(campaign: Path, *extra: str, out: str = "runs", **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli("run", str(campaign), "--out", out, *extra, cwd=campaign.parent, env=fake_env(**env))


def with_nsys(calls: Path, **env: str) -> dict[str, str]:
    return {"NCUCAMPAIGN_NSYS": str(NSYS), "FAKE_NSYS_CALLS": str(calls), **env}


def trace_log(run_dir: Path) -> str:
    return "".join(p.read_text() for p in sorted((run_dir / "logs" / "shared").glob("trace-*.log")))


def test_finding_nsys_beside_ncu_or_a_cuda_toolkits_ncu(tmp_path: Path) -> None:
    own = tmp_path / "nsight-compute" / "host" / "target-linux-x64" / "nsys"
    toolkit = tmp_path / "cuda" / "nsight-compute-2025.3.1" / "host" / "target-linux-x64" / "nsys"
    for nsys in (own, toolkit):
        nsys.parent.mkdir(parents=True)
        nsys.write_text("#!/bin/sh\n")
        nsys.chmod(0o755)
    (tmp_path / "cuda" / "bin").mkdir()
    assert bundled_nsys(tmp_path / "nsight-compute")[0] == own
    assert bundled_nsys(tmp_path / "cuda" / "bin")[1] == toolkit
    opt = tmp_path / "opt" / "nsight-compute"
    for version in ("2025.1.0", "2025.3.1"):
        (opt / version).mkdir(parents=True)
    found = bundled_nsys(tmp_path / "usr" / "bin", installs=opt)  # a toolkit's ncu that starts /opt's newest
    assert found[1:] == [opt / v / "host" / "target-linux-x64" / "nsys" for v in ("2025.3.1", "2025.1.0")]
    for folder, nsys in ((tmp_path / "nsight-compute", own), (tmp_path / "cuda" / "bin", toolkit)):
        ncu = folder / "ncu"
        ncu.write_text("#!/bin/sh\n")
        ncu.chmod(0o755)
        found = find_nsys(str(ncu), {})
        assert isinstance(found, NsysTools) and found.nsys == nsys and found.importer is None
    missing = find_nsys(str(FAKE_NCU_DIR / "ncu"), {})  # (a machine with /opt/nvidia/nsight-compute finds that)
    assert isinstance(missing, NsysTools) or (
        missing.startswith(f"no Nsight Systems at {FAKE_NCU_DIR}/host/target-linux-x64/nsys")
        and missing.endswith("(set NCUCAMPAIGN_NSYS to use one)")
    )
    assert find_nsys("ncu", {"NCUCAMPAIGN_NSYS": "off"}) == "NCUCAMPAIGN_NSYS=off"
    chosen = find_nsys("ncu", {"NCUCAMPAIGN_NSYS": str(NSYS), "NCUCAMPAIGN_NSYS_LIBRARY_PATH": "/libs"})
    assert isinstance(chosen, NsysTools) and chosen.importer is not None and chosen.libraries == "/libs"
    assert chosen.importer.name == "QdstrmImporter"


def test_the_steps_redrawn_progress_bars_are_logged_as_a_terminal_leaves_them() -> None:
    """A real trace log (llama_serve on an H100, 2026-12-05, logged whole before as_shown): the importer's and
    the export's bars, redrawn with carriage returns, end as their last state, a line each; nothing else moves."""
    real = (FIXTURES / "logs" / "nsys_trace_llama_serve.log").read_bytes().decode()  # carriage returns kept
    shown = as_shown(real)
    assert "\r" in real and "\r" not in shown and len(shown) < len(real) // 5
    assert [line for line in shown.splitlines() if line.startswith("Processing")] == [
        "Processing [" + "=" * 63 + "100%]",
        "Processing 17301 events: [" + "=" * 49 + "100%]",
    ]
    assert [line for line in real.split("\n") if "\r" not in line] == [
        line for line in shown.split("\n") if not line.startswith("Processing")
    ]


def test_an_importer_that_cannot_load_is_known_before_any_application_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    tools = find_nsys("ncu", {"NCUCAMPAIGN_NSYS": str(NSYS)})
    assert isinstance(tools, NsysTools)
    monkeypatch.setenv("FAKE_NSYS_IMPORTER", "broken")
    assert "libdw.so.1" in (importer_problem(tools) or "")
    monkeypatch.delenv("FAKE_NSYS_IMPORTER")
    assert importer_problem(tools) is None


@slow
def test_the_trace_by_nsight_systems_gives_the_union_and_splits_that_ncus_trace_gives(
    tmp_path: Path, write_campaign
) -> None:
    campaign = write_campaign(TRACE_TARGETS)
    by_ncu = run(campaign, out="runs-ncu")
    assert by_ncu.returncode == 0, by_ncu.stdout + by_ncu.stderr
    calls, wrapper = logging_ncu(tmp_path / "logged")
    nsys_calls = tmp_path / "nsys-calls.log"
    by_nsys = run(campaign, out="runs-nsys", NCUCAMPAIGN_NCU=str(wrapper), **with_nsys(nsys_calls))
    assert by_nsys.returncode == 0, by_nsys.stdout + by_nsys.stderr
    assert "sharing: trace by Nsight Systems" in by_nsys.stdout
    assert "one application start" in by_nsys.stdout and "by Nsight Systems, which replays nothing" in by_nsys.stdout
    ncu_dir, ncu_manifest = load_manifest(tmp_path / "runs-ncu")
    nsys_dir, nsys_manifest = load_manifest(tmp_path / "runs-nsys")
    trace, union = nsys_manifest["shared_runs"]
    assert trace["status"] == "ok" and trace["kind"] == "trace" and trace["trace"]["tracer"] == "nsys"
    ncu_trace = ncu_manifest["shared_runs"][0]  # the launches the trace's filters select, as ncu's holds them
    assert trace["report"]["path"].endswith(".nsys-launches.json")
    assert trace["report"]["results"] == ncu_trace["report"]["results"] == 74
    assert union["trace"]["tracer"] == "nsys" and union["trace"]["report"] == trace["report"]["path"]
    assert trace["shell_command"].split(" && ")[1].startswith(f"{NSYS} profile -t cuda,nvtx")
    # ncu ran the union only (and its splits): no trace of its own
    ncu_lines = calls.read_text().splitlines()
    assert not any(TRACE_METRIC in line for line in ncu_lines)
    assert (
        sum(
            1
            for line in ncu_lines
            if "--import" not in line and "--version" not in line and "--list" not in line and "--help" not in line
        )
        == 1
    )
    assert [line.split()[1] for line in nsys_calls.read_text().splitlines()] == ["profile", "export"]
    assert not list((nsys_dir / "reports").glob(".trace-*"))  # the work folder is gone
    log = trace_log(nsys_dir)  # the importer's and the export's redrawn bars, as a terminal leaves them: a line each
    assert re.search(r"^Processing \d+ events: \[=+100%\]$", log, re.M) and "[1%" not in log  # (read: \r is \n)
    assert re.search(r"^Processing \[=+100% *\]$", log, re.M)

    # the same union command line, and every split holds what the ncu-traced run's split holds
    def options(shared_run: dict) -> str:  # the union's ncu options, without ncu's path and the report's
        return shared_run["shell_command"].split(" && ")[1].split(" -f -o ")[0].split(" ", 1)[1]

    assert options(union) == options(ncu_manifest["shared_runs"][1])
    assert obtained(nsys_manifest) == obtained(ncu_manifest) == dict.fromkeys(obtained(ncu_manifest), "shared")
    for name in obtained(ncu_manifest):
        assert profiled_launch(nsys_dir, name) == profiled_launch(ncu_dir, name), name


CUB_RANGE = "cub::DeviceReduce::Sum"  # CUB's ranges are of CCCL's own domain (tests/fixtures/zoo/cccl)
CUB_TARGETS = f"""
- name: gemm
  kernel_name: regex:nvjet
  launch_skip: 2
- name: cub_rms
  nvtx_include: "CCCL@{CUB_RANGE}]"
  kernel_name: rmsnorm_kernel
  launch_skip: 1
- name: layer_top_rms
  nvtx_include: "layer]"
  kernel_name: rmsnorm_kernel
  launch_skip: 3
"""


@slow
def test_cubs_ranges_in_their_own_domain_are_traced_by_nsight_systems_as_ncu_places_them(
    tmp_path: Path, write_campaign
) -> None:
    """An application whose CUB pushes CCCL's ranges (each domain a stack of its own: `layer]` holds under
    CUB's range too), selected by that domain or not: nsys's trace stands in, every split verifies, and
    each target holds what it holds with ncu's trace."""
    campaign = write_campaign(CUB_TARGETS, defaults=f"args: [--mlp-range, 'CCCL@{CUB_RANGE}']")
    by_ncu = run(campaign, out="runs-ncu")
    by_nsys = run(campaign, out="runs-nsys", **with_nsys(tmp_path / "nsys-calls.log"))
    assert by_ncu.returncode == by_nsys.returncode == 0, by_nsys.stdout + by_nsys.stderr
    ncu_dir, ncu_manifest = load_manifest(tmp_path / "runs-ncu")
    nsys_dir, nsys_manifest = load_manifest(tmp_path / "runs-nsys")
    (trace,) = [r for r in nsys_manifest["shared_runs"] if r["kind"] == "trace"]
    assert trace["status"] == "ok" and trace["trace"]["tracer"] == "nsys", trace_log(nsys_dir)
    assert obtained(nsys_manifest) == obtained(ncu_manifest) == dict.fromkeys(obtained(ncu_manifest), "shared")
    for name in obtained(ncu_manifest):
        assert profiled_launch(nsys_dir, name) == profiled_launch(ncu_dir, name), name
    assert f"CCCL:{CUB_RANGE}" in str(profiled_launch(nsys_dir, "cub_rms"))


@slow
@pytest.mark.parametrize(
    ("knobs", "why", "profiled"),
    [
        ({"FAKE_NSYS_IMPORTER": "broken"}, "its importer QdstrmImporter cannot run: ", False),
        ({"FAKE_NSYS_IMPORTER": "fails"}, "QdstrmImporter -f failed (1): Import failed", True),
        ({"FAKE_NSYS_FAIL": "export"}, "nsys export failed (1): fake nsys: export failed", True),
        ({"FAKE_NSYS_FAIL": "profile"}, "nsys profile exited with 1", True),
        ({"FAKE_NSYS_PROCESSES": "2"}, "several processes launched kernels", True),
        ({"FAKE_NSYS_DOMAIN": "NCCL"}, "NVTX ranges of the domain 'NCCL', which ncu places its own way", True),
    ],
)
def test_whatever_keeps_nsys_from_standing_in_leaves_the_run_to_ncus_trace(
    tmp_path: Path, write_campaign, knobs: dict[str, str], why: str, profiled: bool
) -> None:
    campaign = write_campaign(TRACE_TARGETS)
    calls = tmp_path / "nsys-calls.log"
    done = run(campaign, **with_nsys(calls, **knobs))
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    assert set(obtained(manifest).values()) == {"shared"}  # shared as ever, on ncu's trace
    traces = [r for r in manifest["shared_runs"] if r["kind"] == "trace"]
    assert [r.get("trace", {}) and r["trace"]["tracer"] for r in traces][-1] in (None, "ncu")
    assert (calls.is_file() and "profile" in calls.read_text()) == profiled  # a broken importer costs no run
    if profiled:  # the run under nsys is recorded with why it was not used
        (line,) = [x for x in done.stdout.splitlines() if x.startswith("sharing: trace by Nsight Systems ")]
        assert re.search(r" s \(not used: [^|]*\) \| trace by ncu ", line) and why[:40] in line, line  # not "error"
        assert traces[0]["status"] == "profiler_error" and why in traces[0]["message"]
        assert traces[1]["status"] == "ok" and TRACE_METRIC in traces[1]["shell_command"]
    else:
        assert len(traces) == 1 and TRACE_METRIC in traces[0]["shell_command"]
    (line,) = [x for x in trace_log(run_dir).splitlines() if x.startswith("# ncucampaign: traced by ncu")]
    assert line.startswith("# ncucampaign: traced by ncu, not by Nsight Systems: ") and why in line


@slow
@pytest.mark.parametrize(
    ("extra", "defaults", "why"),
    [
        ('- name: by_regex\n  nvtx_include: "regex:^ml.*]"\n  kernel_name: rmsnorm_kernel\n', "",
         "the NVTX expression 'regex:^ml.*]' is matched only by ncu"),
        ("", "args: [--nproc-per-node, '1']", "a multi-process launcher (--nproc-per-node) starts the application"),
    ],
)  # fmt: skip
def test_what_only_ncu_can_trace_keeps_ncus_trace_and_runs_no_nsys(
    tmp_path: Path, write_campaign, extra: str, defaults: str, why: str
) -> None:
    campaign = write_campaign(TRACE_TARGETS + extra, defaults=defaults)
    calls = tmp_path / "nsys-calls.log"
    done = run(campaign, **with_nsys(calls))
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    assert not calls.exists() and set(obtained(manifest).values()) == {"shared"}
    assert f"# ncucampaign: traced by ncu, not by Nsight Systems: {why}\n" in trace_log(run_dir)
    # said where people read the run, not in the trace's log only (the breakdown said `trace by ncu 28.1 s (ok)`)
    assert manifest["shared_runs"][0]["trace"]["declined"] == f"not by Nsight Systems: {why}"
    assert re.search(
        rf"sharing: trace by ncu [0-9.]+ s \(ok; not by Nsight Systems: {re.escape(why)}\) \|", done.stdout
    )
    # a machine without Nsight Systems: nothing the campaign could change kept it out, and nothing is said
    absent = run(campaign, out="runs-absent", NCUCAMPAIGN_NSYS=str(tmp_path / "no-nsys"))
    _, manifest = load_manifest(tmp_path / "runs-absent")
    assert absent.returncode == 0 and manifest["shared_runs"][0]["trace"].get("declined") is None, absent.stdout
    assert "not by Nsight Systems" not in absent.stdout


@slow
def test_a_cached_nsys_trace_is_reused_and_a_damaged_one_traced_again(tmp_path: Path, write_campaign) -> None:
    campaign = write_campaign(TRACE_TARGETS)
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "w"]):
        subprocess.run(["git", *command], cwd=tmp_path, check=True, capture_output=True)
    calls = tmp_path.parent / f"{tmp_path.name}-nsys-calls.log"  # outside the workload
    assert run(campaign, **with_nsys(calls)).returncode == 0
    assert run(campaign, **with_nsys(calls)).returncode == 0
    _, second = load_manifest(tmp_path / "runs")
    assert [r["name"] for r in second["shared_runs"]] == ["shared/1"]  # no trace run this time
    assert second["shared_runs"][0]["trace"]["reused"] is True and second["shared_runs"][0]["trace"]["tracer"] == "nsys"
    assert calls.read_text().count(" profile ") == 1
    (cached,) = (tmp_path / "runs" / ".cache" / "traces").glob("*.nsys-launches.json")
    cached.write_text('{"launches": [["half a launch"')  # damaged, or forged: not the file that was kept
    done = run(campaign, **with_nsys(calls))
    assert done.returncode == 0, done.stdout + done.stderr
    _, third = load_manifest(tmp_path / "runs")
    assert [r["name"][:13] for r in third["shared_runs"]] == ["shared/trace-", "shared/1"]  # traced again
    assert calls.read_text().count(" profile ") == 2 and set(obtained(third).values()) == {"shared"}
    assert json.loads(cached.read_text())["listings"]  # kept anew
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()
    assert f"the cached trace {cached} is not the file that was kept (its stamp differs): traced again" in (
        trace_log(run_dir)
    )


@slow
def test_a_target_whose_launches_never_happen_is_decided_on_the_nsys_trace_its_splits_confirmed(
    tmp_path: Path,
) -> None:
    text = campaign_text(TRACE_TARGETS + "- name: late\n  kernel_name: rmsnorm_kernel\n  launch_skip: 55\n")
    campaign = tmp_path / "camp.yaml"
    campaign.write_text(text.replace("  sections: SpeedOfLight\n", "  metrics: [gpu__time_duration.sum]\n"))
    done = run(campaign, **with_nsys(tmp_path.parent / f"{tmp_path.name}-calls.log"))
    assert done.returncode == 1, done.stdout + done.stderr  # `late` profiles nothing: no_kernels
    _, manifest = load_manifest(tmp_path / "runs")
    late = target(manifest, "late")
    assert late["status"] == "no_kernels" and late["obtained"]["how"] == "trace" and late["attempts"] == []
    assert (
        ", by Nsight Systems; 2 splits of its own filters verified against it confirmed it) ran the application"
        in (late["obtained"]["reason"])
    )
    assert {t["obtained"]["how"] for t in manifest["targets"] if t["name"] != "late"} == {"shared"}


@slow
def test_a_ctrl_c_during_the_nsys_trace_stops_the_run_and_starts_no_other_trace(tmp_path: Path, write_campaign) -> None:
    hang = tmp_path / "hang"
    hang.touch()
    args = f"args: [--hang-at-step, '2', --hang-file, {json.dumps(str(hang))}]"
    campaign = write_campaign(TRACE_TARGETS, defaults=args)
    runner = subprocess.Popen(
        [sys.executable, "-m", "ncucampaign", "run", str(campaign), "--out", "runs"],
        cwd=tmp_path,
        env=fake_env(**with_nsys(tmp_path.parent / f"{tmp_path.name}-calls.log")),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    logs = tmp_path / "runs" / "camp" / "latest" / "logs" / "shared"
    deadline = time.monotonic() + 60
    while (
        "hanging at step 2" not in "".join(p.read_text() for p in logs.glob("trace-*.log")) if logs.is_dir() else True
    ):
        assert time.monotonic() < deadline and runner.poll() is None, "the nsys trace never reached the hang"
        time.sleep(0.05)
    runner.send_signal(signal.SIGINT)
    out, err = runner.communicate(timeout=60)
    assert runner.returncode == 130, out + err
    _, manifest = load_manifest(tmp_path / "runs")
    (trace,) = manifest["shared_runs"]  # no ncu trace after it
    assert trace["status"] == "interrupted" and trace["attempts"][0]["status"] == "interrupted"
    assert {t["status"] for t in manifest["targets"]} == {"interrupted"}
    assert "Traceback" not in err
    hang.unlink()


@slow
def test_a_relative_nsys_path_is_taken_from_where_the_user_stands(tmp_path: Path) -> None:
    """NCUCAMPAIGN_NSYS=./tools/.../nsys, the campaign in another folder: the path is resolved once where it is
    found (as --ncu ./myncu is), not searched on PATH nor taken from the application's folder (before: exit 3,
    every target left interrupted)."""
    for tool in (NSYS.parents[2], FAKE_NCU_DIR):  # the fake nsys runs the fake ncu's application beside it
        shutil.copytree(tool, tmp_path / "tools" / tool.name)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "camp.yaml").write_text(campaign_text(TRACE_TARGETS))
    relative = f"./tools/{NSYS.parents[2].name}/{NSYS.relative_to(NSYS.parents[2])}"
    calls = tmp_path / "nsys-calls.log"
    env = fake_env(NCUCAMPAIGN_NSYS=relative, FAKE_NSYS_CALLS=str(calls))
    done = run_cli("run", "app/camp.yaml", "--out", "runs", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "sharing: trace by Nsight Systems" in done.stdout, done.stdout
    assert calls.read_text()


@slow
def test_an_nsys_that_cannot_start_leaves_the_trace_to_ncu(tmp_path: Path, write_campaign) -> None:
    """An executable that is no program (no interpreter line: exec says 'Exec format error'): before, exit 3 with
    every target left interrupted; now ncu's trace stands in, as for any nsys that cannot trace."""
    broken = tmp_path / "nsys"
    broken.write_bytes(b"\x00not a program\n")
    broken.chmod(0o755)
    campaign = write_campaign(TRACE_TARGETS)
    done = run(campaign, NCUCAMPAIGN_NSYS=str(broken))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # its seconds are what a loaded machine took to refuse the exec (0.0 s, or 0.1 s under CI's load)
    assert re.search(r"trace by Nsight Systems [0-9.]+ s \(not used: nsys cannot start.*\| trace by ncu", done.stdout)
    _, manifest = load_manifest(campaign.parent / "runs")
    assert {t["status"] for t in manifest["targets"]} == {"ok"}
    assert "nsys cannot start" in manifest["shared_runs"][0]["message"]


@slow
def test_the_breakdown_times_the_whole_nsys_trace_its_export_included(tmp_path: Path, write_campaign) -> None:
    """Before: `trace by Nsight Systems 0.1 s` after a 120 s export read: the record held nsys profile's seconds."""
    campaign = write_campaign(TRACE_TARGETS)
    done = run(campaign, **with_nsys(tmp_path / "calls.log", FAKE_NSYS_EXPORT_S="1.0"))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    _, manifest = load_manifest(campaign.parent / "runs")
    trace = manifest["shared_runs"][0]
    assert trace["kind"] == "trace" and trace["seconds"] >= 1.0 > trace["attempts"][0]["seconds"]
    shown = re.search(r"trace by Nsight Systems (\d+\.\d) s", done.stdout)
    assert shown is not None and float(shown.group(1)) >= 1.0, done.stdout


@slow
def test_a_kernel_nsys_names_otherwise_is_not_confirmed_missing_by_other_kernels_splits(
    tmp_path: Path, write_campaign
) -> None:
    """Before: nsys named one kernel otherwise (a cuDNN kernel renamed in the export), and its targets closed
    no_kernels, 'confirmed' by the verified splits of other kernels; the application launched it every step."""
    campaign = write_campaign(TRACE_TARGETS)
    done = run(campaign, **with_nsys(tmp_path / "calls.log", FAKE_NSYS_EXPORT="renamed-nvjet"))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    _, manifest = load_manifest(campaign.parent / "runs")
    gemms = [t for t in manifest["targets"] if t["name"].startswith("gemm")]
    assert [(t["status"], t["obtained"]["how"]) for t in gemms] == [("ok", "alone"), ("ok", "alone")]
    assert all("no verified split of its filters confirmed" in t["obtained"]["reason"] for t in gemms)
