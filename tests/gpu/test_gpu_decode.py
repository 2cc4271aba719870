"""On a GPU machine with real ncu and PyTorch: the example campaign, and a hanging application.

Run with `pytest -m gpu tests/gpu`; everything here skips cleanly elsewhere. Set NCUCAMPAIGN_GPU_OUT
to a folder to keep the run directories (logs and manifests) for inspection.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from tests.gpu.gpu import ROOT, manifest_of, needs_gpu, out_dir, run, start

pytestmark = needs_gpu


def test_example_campaign_profiles_every_target(tmp_path: Path) -> None:
    runs = out_dir(tmp_path)
    started = time.monotonic()
    extra = os.environ.get("NCUCAMPAIGN_GPU_RUN_ARGS", "").split()  # e.g. --gpus all
    done = run("run", "campaigns/decode.yaml", *extra, "--out", str(runs), cwd=ROOT, timeout=560)
    print(done.stdout[-6000:], done.stderr[-3000:], f"{time.monotonic() - started:.0f} s", sep="\n")
    manifest = manifest_of(runs, "decode")
    not_ok = {t["name"]: t["message"] for t in manifest["targets"] if t["status"] != "ok"}
    assert not not_ok
    for record in manifest["targets"]:
        assert record["report"]["results_from"] == "report"
        assert record["report"]["results"] == record["expected_results"], record["name"]
    assert manifest["ncu"]["version"], manifest["ncu"]
    assert manifest["gpus"] and manifest["gpus"][0]["uuid"].startswith("GPU-")
    assert done.returncode == 0


def test_hanging_application_ends_at_its_timeout_and_leaves_nothing(tmp_path: Path) -> None:
    marker = f"hang-{os.getpid()}-{time.time_ns()}"  # finds this test's processes in /proc
    campaign = workload_campaign(
        tmp_path / "hang.yaml",
        marker,
        """\
  - name: hangs
    nvtx_include: decode_step/
    kernel_name: rmsnorm_kernel
    launch_count: 100          # never reached: the workload hangs at step 3
    args: [--hang-at-step, "3"]
    timeout: 45
    stop_grace: 15
  - name: after_the_hang
    kernel_name: rmsnorm_kernel
    launch_count: 1
""",
    )
    runs = out_dir(tmp_path)
    done = run("run", str(campaign), "--out", str(runs), cwd=tmp_path, timeout=300)
    print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")
    manifest = manifest_of(runs, "hang")
    hung, after = manifest["targets"]
    assert hung["status"] == "timed_out"
    assert hung["attempts"][0]["signals_sent"][0] == "SIGINT"
    assert after["status"] == "ok" and after["report"]["results"] == 1
    assert not survivors(marker)
    assert done.returncode == 1


def test_ctrl_c_mid_campaign_then_resume_on_real_ncu(tmp_path: Path) -> None:
    """SIGINT to the runner while real ncu profiles: the attempt stops gracefully (report kept or not,
    nothing left running), the manifest says interrupted, and --resume completes the run."""
    marker = f"sigint-{os.getpid()}-{time.time_ns()}"
    targets = "\n".join(
        f"  - name: t{i}\n    kernel_name: rmsnorm_kernel\n    launch_skip: {i}\n    launch_count: 1" for i in range(3)
    )
    campaign = workload_campaign(tmp_path / "ctrlc.yaml", marker, targets + "\n")
    runs = out_dir(tmp_path)
    # --no-share: the three targets would otherwise share one run; this test is about one target's attempt
    runner = start(("run", str(campaign), "--out", str(runs), "--no-share"), cwd=tmp_path)
    log = runs / "ctrlc" / "latest" / "logs" / "t1.log"
    deadline = time.monotonic() + 120
    while "==PROF== Connected to process" not in (log.read_text() if log.is_file() else ""):
        assert time.monotonic() < deadline, "t1's application never connected to ncu"
        time.sleep(0.2)
    runner.send_signal(signal.SIGINT)
    out, err = runner.communicate(timeout=120)
    print(out[-3000:], err[-2000:], sep="\n")
    assert runner.returncode == 130
    manifest = manifest_of(runs, "ctrlc")
    assert manifest["state"] == "interrupted"
    assert [t["status"] for t in manifest["targets"]] == ["ok", "interrupted", "pending"]
    assert manifest["targets"][1]["attempts"][0]["signals_sent"][0] == "SIGINT"
    assert not survivors(marker)
    done = run("run", str(campaign), "--out", str(runs), "--resume", "--no-share", cwd=tmp_path, timeout=300)
    print(done.stdout[-3000:], done.stderr[-2000:], sep="\n")
    assert done.returncode == 0
    assert [t["status"] for t in manifest_of(runs, "ctrlc")["targets"]] == ["ok", "ok", "ok"]


def workload_campaign(path: Path, marker: str, targets: str) -> Path:
    """A campaign on the example workload whose processes carry `marker` in their environment."""
    path.write_text(
        f"""
application:
  command: [python3, {json.dumps(str(ROOT / "campaigns" / "decode_workload.py"))}, --steps, "12"]
  env: {{NCUCAMPAIGN_TEST_MARKER: {marker}}}
defaults:
  sections: [SpeedOfLight]
  clock_control: none
  retries: 0
targets:
{targets}"""
    )
    return path


def survivors(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(entry.name)
        except OSError:
            continue
    return found
