"""Ask the installed ncu what a diagnosis suggests: whether it accepts a kernel filter and whether it
lists an option. Asked only when an attempt needs the answer (a replay hang), at most once each."""

from __future__ import annotations

import functools
import re
import shutil

from ncucampaign.execute.process import probe, run_captured

CHECK_TIMEOUT_S = 120.0


class InstalledNcuChecks:
    def __init__(self, ncu: str) -> None:
        self.ncu = ncu

    @functools.cache  # noqa: B019 (one object per ncu path, kept for the run: see checks_for)
    def accepts_kernel_name(self, expression: str) -> bool | None:
        """Runs `ncu --kernel-name EXPR true`: ncu parses the filter, finds no CUDA work and exits 0;
        a filter it refuses ends with ==ERROR== and a non-zero code (docs/ncu-behaviour.md)."""
        program = shutil.which("true")
        if program is None:
            return None
        code, output = run_captured(
            [self.ncu, "--kernel-name", expression, "--launch-count", "1", program], CHECK_TIMEOUT_S
        )
        if code is None:
            return None
        return code == 0 and "==ERROR==" not in output

    @functools.cache  # noqa: B019
    def lists_option(self, flag: str) -> bool | None:
        text = probe([self.ncu, "--help"])
        if text is None:
            return None
        return re.search(rf"(^|[\s,]){re.escape(flag)}\b", text, re.MULTILINE) is not None


@functools.cache
def checks_for(ncu: str) -> InstalledNcuChecks:
    return InstalledNcuChecks(ncu)
