"""ncucampaign.markers: the manual's synchronize-push-synchronize-pop order, torch imported lazily."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

import ncucampaign.markers as markers


@pytest.fixture
def fake_torch(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    torch = types.ModuleType("torch")
    cuda = types.ModuleType("torch.cuda")
    cuda.synchronize = lambda: calls.append("sync")
    cuda.nvtx = types.SimpleNamespace(
        range_push=lambda name: calls.append(f"push {name}"), range_pop=lambda: calls.append("pop")
    )
    runtime = types.SimpleNamespace(
        cudaProfilerStart=lambda: calls.append("start") or 0, cudaProfilerStop=lambda: calls.append("stop") or 0
    )
    cuda.cudart = lambda: runtime
    cuda.check_error = lambda code: calls.append(f"check {code}")
    torch.cuda = cuda
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.cuda", cuda)
    return calls


def test_module_imports_without_torch() -> None:
    # A fresh interpreter where `import torch` fails: importing the markers must not need it.
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import ncucampaign.markers as m\n"
        "print(callable(m.ncu_range) and callable(m.profiled_region))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr


def test_ncu_range_order_even_on_error(fake_torch: list[str]) -> None:
    with pytest.raises(RuntimeError), markers.ncu_range("decode_step"):
        fake_torch.append("work")
        raise RuntimeError
    assert fake_torch == ["sync", "push decode_step", "work", "sync", "pop"]


def test_profiled_region_order(fake_torch: list[str]) -> None:
    with markers.profiled_region():
        fake_torch.append("work")
    assert fake_torch == ["sync", "start", "check 0", "work", "sync", "stop", "check 0"]


def test_using_a_marker_without_torch_says_what_to_install() -> None:
    """Before the fix: a bare ModuleNotFoundError."""
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import ncucampaign.markers as m\n"
        "try:\n"
        "    with m.ncu_range('x'): pass\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("MarkersNeedTorch ncucampaign.markers needs PyTorch"), done.stdout + done.stderr
    assert "pip install torch" in done.stdout
