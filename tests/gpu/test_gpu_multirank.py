"""On a machine with two GPUs, real ncu and PyTorch with NCCL: campaigns/multirank.yaml.

The compute targets profile; the deliberately hanging target (a collective in the filter) is
stopped early as replay_hang with the exclusion hint, nothing is left running, and the exclusion
pasted into the campaign then runs ok. Skips cleanly with fewer than two GPUs.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.gpu.gpu import ROOT, WHY_NOT, manifest_of, out_dir, run


def _gpus() -> int:
    if WHY_NOT is not None:
        return 0
    done = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"], capture_output=True)
    return int(done.stdout or 0) if done.returncode == 0 else 0


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_gpus() < 2, reason=WHY_NOT or "fewer than 2 GPUs")]
COMPUTE = ("gemm_rank0", "gemm_all_ranks", "attention_rank0", "attention_all_ranks")


def _workload_processes() -> list[str]:
    found = []
    for status in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            command = status.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "multirank_workload.py" in command:
            found.append(command)
    return found


def test_multirank_campaign_hang_is_caught_and_its_fix_runs(tmp_path: Path) -> None:
    runs = out_dir(tmp_path)
    started = time.monotonic()
    done = run("run", "campaigns/multirank.yaml", "--out", str(runs), cwd=ROOT, timeout=560)
    print(done.stdout[-6000:], done.stderr[-3000:], f"{time.monotonic() - started:.0f} s", sep="\n")
    manifest = manifest_of(runs, "multirank")
    by_name = {t["name"]: t for t in manifest["targets"]}
    for name in COMPUTE:
        assert by_name[name]["status"] == "ok", (name, by_name[name]["message"])
    hung = by_name["step_kernels"]
    print("step_kernels:", hung["message"], f"attempt {hung['attempts'][0]['seconds']} s", *hung["diagnosis"], sep="\n")
    assert hung["status"] == "replay_hang" and len(hung["attempts"]) == 1
    assert hung["attempts"][0]["seconds"] < 300  # well before the 5-minute timeout
    assert not _workload_processes()
    hint = next(h for h in hung["diagnosis"] if "kernel_name: '" in h)
    assert "(the installed ncu accepts it)" in hint
    expression = re.search(r"kernel_name: '([^']+)'", hint).group(1)

    campaign = yaml.safe_load((ROOT / "campaigns" / "multirank.yaml").read_text())
    campaign["name"] = "multirank_fixed"
    campaign["application"]["cwd"] = str(ROOT / "campaigns")
    campaign["targets"] = [{**t, "kernel_name": expression} for t in campaign["targets"] if t["name"] == "step_kernels"]
    fixed = tmp_path / "multirank_fixed.yaml"
    fixed.write_text(yaml.safe_dump(campaign))
    again = run("run", str(fixed), "--out", str(runs), cwd=tmp_path, timeout=400)
    print(again.stdout[-3000:], again.stderr[-2000:], sep="\n")
    record = manifest_of(runs, "multirank_fixed")["targets"][0]
    assert record["status"] == "ok", record["message"]
    assert record["report"]["results"] == 8
    assert again.returncode == 0
