"""Ask the installed ncu what a diagnosis suggests: whether it accepts a kernel filter and whether it
lists an option. Asked only when an attempt needs the answer (a replay hang), at most once each."""

from __future__ import annotations

import functools
import shutil
from dataclasses import dataclass

from ncucampaign.execute.process.installed import installed_ncu
from ncucampaign.execute.process.short import run_captured

CHECK_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class InstalledNcuChecks:
    ncu: str

    def accepts_kernel_name(self, expression: str) -> bool | None:
        return _accepts_kernel_name(self.ncu, expression)

    def lists_option(self, flag: str) -> bool | None:
        return _lists_option(self.ncu, flag)


@functools.cache
def _accepts_kernel_name(ncu: str, expression: str) -> bool | None:
    """Runs `ncu --kernel-name EXPR true`: ncu parses the filter, finds no CUDA work and exits 0; a
    filter it refuses ends with ==ERROR== and a non-zero code (docs/ncu-behaviour.md, "Multi-rank jobs")."""
    program = shutil.which("true")
    if program is None:
        return None
    code, output = run_captured([ncu, "--kernel-name", expression, "--launch-count", "1", program], CHECK_TIMEOUT_S)
    if code is None:
        return None
    return code == 0 and "==ERROR==" not in output


def _lists_option(ncu: str, flag: str) -> bool | None:
    """From what the installed ncu says of itself (its --help, parsed and cached per binary)."""
    installed = installed_ncu(ncu)
    return None if installed is None or installed.options is None else flag in installed.options
