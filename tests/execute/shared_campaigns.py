"""Campaigns and readers the shared-run tests share: five targets whose windows need the discovery
trace, the CLI's `run` on one, what each target obtained, what a target's own report holds, and the
fake nsys."""

from __future__ import annotations

import csv
import io
import re
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import REPORT, TESTS, fake_env, run_cli

NSYS = TESTS / "fake_nsys" / "host" / "target-linux-x64" / "nsys"

# Five targets whose windows need the discovery trace (different kernels and an NVTX range); the
# union picks 7 launches of the fake application (see fake_app.py).
TRACE_TARGETS = """
- name: rms
  kernel_name: rmsnorm_kernel
  matrix:
    launch_skip: [0, 5]
- name: gemm
  kernel_name: regex:nvjet
  matrix:
    launch_skip: [1, 2]
- name: mlp_rms
  nvtx_include: "mlp]"
  kernel_name: rmsnorm_kernel
  launch_skip: 1
"""


def run(campaign: Path, *extra: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli("run", str(campaign), "--out", "runs", *extra, cwd=campaign.parent, env=fake_env(**env))


def obtained(manifest: dict[str, Any]) -> dict[str, str]:
    return {t["name"]: (t.get("obtained") or {}).get("how", "-") for t in manifest["targets"]}


def profiled_launch(run_dir: Path, name: str) -> list[tuple[str, ...]]:
    """What a target's own report holds, as the fake ncu lists it: kernel and NVTX stack."""
    listing = subprocess.run(
        ["ncu", "--import", str(run_dir / "reports" / f"{name}{REPORT}"), "--page", "raw", "--csv"],
        capture_output=True,
        text=True,
        env=fake_env(),
        check=True,
    ).stdout
    return [(row[3], *re.findall(r'"([^"]*)"', row[2])) for row in list(csv.reader(io.StringIO(listing)))[2:]]
