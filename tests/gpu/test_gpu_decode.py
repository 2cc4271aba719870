"""On a GPU machine with real ncu and PyTorch: the example campaign, and a hanging application.

Run with `pytest -m gpu tests/gpu`; everything here skips cleanly elsewhere. Set NCUCAMPAIGN_GPU_OUT
to a folder to keep the run directories (logs and manifests) for inspection.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.gpu.gpu import ROOT, manifest_of, needs_gpu, out_dir, run

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
    campaign = tmp_path / "hang.yaml"
    campaign.write_text(
        f"""
application:
  command: [python3, {json.dumps(str(ROOT / "campaigns" / "decode_workload.py"))}, --steps, "12"]
  env: {{NCUCAMPAIGN_TEST_MARKER: {marker}}}
defaults:
  sections: [SpeedOfLight]
  clock_control: none
  retries: 0
targets:
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
"""
    )
    runs = out_dir(tmp_path)
    done = run("run", str(campaign), "--out", str(runs), cwd=tmp_path, timeout=300)
    print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")
    manifest = manifest_of(runs, "hang")
    hung, after = manifest["targets"]
    assert hung["status"] == "timed_out"
    assert hung["attempts"][0]["signals_sent"][0] == "SIGINT"
    assert after["status"] == "ok" and after["report"]["results"] == 1
    survivors = []
    for entry in Path("/proc").iterdir():
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                survivors.append(entry.name)
        except OSError:
            continue
    assert not survivors
    assert done.returncode == 1
