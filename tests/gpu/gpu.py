"""Shared by the GPU tests: is a GPU with real ncu here, where runs go, how the CLI is run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _gpu_ready() -> str | None:
    if not sys.platform.startswith("linux"):
        return "Linux only"
    if shutil.which("ncu") is None:
        return "ncu is not on PATH"
    if shutil.which("nvidia-smi") is None:
        return "no nvidia-smi"
    probe = subprocess.run(
        [sys.executable, "-c", "import torch, triton; assert torch.cuda.is_available()"], capture_output=True
    )
    return None if probe.returncode == 0 else "torch with CUDA (and triton) not importable"


WHY_NOT = _gpu_ready()
needs_gpu = [pytest.mark.gpu, pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")]


def out_dir(tmp_path: Path) -> Path:
    """NCUCAMPAIGN_GPU_OUT keeps the run directories for inspection; else a temporary folder."""
    keep = os.environ.get("NCUCAMPAIGN_GPU_OUT")
    path = Path(keep) if keep else tmp_path / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def run(*args: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """The CLI, with what it printed printed again: pytest shows it under a failing test (a GPU run that
    failed used to say only its exit code)."""
    done = subprocess.run(
        [sys.executable, "-m", "ncucampaign", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    print(
        f"$ ncucampaign {' '.join(args)}  (exit {done.returncode})", done.stdout[-6000:], done.stderr[-3000:], sep="\n"
    )
    return done


def start(args: tuple[str, ...], cwd: Path) -> subprocess.Popen[str]:
    """The CLI in the background (to signal it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "ncucampaign", *args],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def latest(runs: Path, campaign: str) -> Path:
    return (runs / campaign / "latest").resolve()


def manifest_of(runs: Path, campaign: str) -> dict:
    return json.loads((latest(runs, campaign) / "manifest.json").read_text())
