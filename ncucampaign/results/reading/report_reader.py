"""Which reader reads .ncu-rep reports: NVIDIA's `ncu_report` module, from the optional `ncu-report`
wheel (`pip install ncucampaign[reports]`) or, on a machine with Nsight Compute installed, from ncu's
own `extras/python` folder; and whether it can open what this ncu writes (doctor's check)."""

from __future__ import annotations

import importlib
import importlib.metadata
import shutil
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

from ncucampaign.execute.doctor_check import Check


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


NO_READER = "no report reader: pip install 'ncucampaign[reports]' (NVIDIA's ncu-report)"


def reader_too_old(ncu_version: str | None, wheel_version: str | None) -> str | None:
    """Why NVIDIA's `ncu-report` wheel cannot read what this ncu writes (an older reader does not open newer reports:
    its major.minor must be at least ncu's), with the wheel to install; None when fine or unknown. Pure."""

    def major_minor(text: str | None) -> tuple[int, int] | None:
        parts = (text or "").split(".")
        return (int(parts[0]), int(parts[1])) if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() else None

    ncu, wheel = major_minor(ncu_version), major_minor(wheel_version)
    if ncu is None or wheel is None or wheel >= ncu:
        return None
    return (
        f"the report reader ncu-report {wheel_version} is older than ncu {ncu_version} and cannot open its "
        f"reports: pip install 'ncu-report>={ncu[0]}.{ncu[1]}'"
    )


def wheel_version() -> str | None:
    """The installed `ncu-report` wheel's version (None: not installed as a wheel)."""
    try:
        return importlib.metadata.version("ncu-report")
    except importlib.metadata.PackageNotFoundError:
        return None


def reader_check(ncu_path: str | None, ncu_version: str | None) -> Check:
    """doctor's check of the report reader: importable, and not older than ncu."""
    module = ncu_report_module(ncu_path)
    if module is None:
        fix = NO_READER.split(": ", 1)[1]
        return Check("report reader", "fail", "NVIDIA's ncu_report module cannot be imported", fix)
    wheel = wheel_version()
    too_old = reader_too_old(ncu_version, wheel)
    if too_old:
        what, fix = too_old.split(": pip", 1)
        return Check("report reader", "fail", what, "pip" + fix)
    source = f"ncu-report {wheel} (wheel)" if wheel else f"ncu's own, {Path(module.__file__ or '?').parent}"
    reads = f", reads ncu {ncu_version}'s reports" if ncu_version else ""
    return Check("report reader", "ok", source + reads)
