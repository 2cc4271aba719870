"""Read .ncu-rep reports with NVIDIA's `ncu_report` module.

The module comes from the optional `ncu-report` wheel (`pip install ncucampaign[reports]`) or, on
a machine with Nsight Compute installed, from ncu's own `extras/python` folder. Without either,
callers fall back to ncu's console output (one `==PROF== Profiling` line per result).
"""

from __future__ import annotations

import importlib
import shutil
import sys
from functools import cache
from pathlib import Path
from types import ModuleType


@cache
def ncu_report_module(ncu: str | None = None) -> ModuleType | None:
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    if ncu is None:
        return None
    found = shutil.which(ncu)
    if not found:
        return None
    for folder in list(Path(found).resolve().parents)[:4]:
        candidate = folder / "extras" / "python"
        if (candidate / "ncu_report.py").is_file():
            sys.path.append(str(candidate))
            try:
                return importlib.import_module("ncu_report")
            except Exception:  # a copy built for another Python: behave as if absent
                sys.path.remove(str(candidate))
                return None
    return None


def count_results(report: Path, ncu: str | None = None) -> int | None:
    """Number of results (profiled kernels, graphs or ranges) in a report; None when it cannot be read."""
    module = ncu_report_module(ncu)
    if module is None:
        return None
    try:
        context = module.load_report(str(report))
        return sum(context.range_by_idx(i).num_actions() for i in range(context.num_ranges()))
    except Exception:  # ncu_report raises plain exceptions for unreadable files
        return None
