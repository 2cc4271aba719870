"""What ncu says when this machine refuses profiling altogether (no permission for the GPU's counters, exit 1
after the application ran; a counter library that does not load; another profiler holding them). Every target
would meet it, so `run` stops at the first ncu that shows it; doctor's probe reads it the same way. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ncucampaign.errors import EnvironmentProblem

PERMISSION_FIX = (
    "counters are for admin users only: on the host, `options nvidia NVreg_RestrictProfilingToAdminUsers=0` "
    "in /etc/modprobe.d/ and reload the driver (or profile as root); in a container, add the SYS_ADMIN "
    "capability (docker --cap-add SYS_ADMIN; Kubernetes securityContext.capabilities.add: [SYS_ADMIN])"
)


@dataclass(frozen=True)
class Refusal:
    """Why ncu cannot profile here, and the fix in one line."""

    detail: str
    fix: str


def machine_refusal(errors: Iterable[str], admin_only: bool | None = None) -> Refusal | None:
    """The refusal ncu's ==ERROR== lines (or its whole output) show, if any. `admin_only`: the
    driver's RmProfilingAdminOnly, where it could be read."""
    text = "\n".join(errors)
    if "ERR_NVGPUCTRPERM" in text:
        told = " (the driver says RmProfilingAdminOnly: 1)" if admin_only else ""
        return Refusal(f"ERR_NVGPUCTRPERM: no permission to read the GPU's counters{told}", PERMISSION_FIX)
    if "LibraryNotLoaded" in text:
        return Refusal(
            "ncu's counter library did not load (seen in containers that hide the GPU's counters)",
            "run the container with the NVIDIA Container Toolkit's utility capability (NVIDIA_DRIVER_CAPABILITIES="
            "compute,utility) and SYS_ADMIN, or profile outside the container",
        )
    if "driver resource was unavailable" in text:
        return Refusal(
            "another profiler holds the counters (DCGM's profiling, or another ncu)",
            "pause it: dcgmi profile --pause (and --resume afterwards), or wait for the other ncu",
        )
    return None


class MachineRefused(EnvironmentProblem):
    """A run's ncu process met a refusal every target would meet: the run stops (exit 3), with what it
    recorded kept, and --resume finishes it once the machine is mended."""

    def __init__(self, refusal: Refusal, where: str) -> None:
        super().__init__(
            f"this machine cannot profile: {refusal.detail} ({where}); nothing more was run\n"
            f"  fix: {refusal.fix}\n"
            "(`ncucampaign doctor` checks the machine; then finish with ncucampaign run --resume)"
        )
        self.refusal = refusal
