"""What ncucampaign relies on that differs between ncu versions, in one place. Pure. Only 2025.3.1 was measured;
later rows cite NVIDIA's documentation (docs/ncu-behaviour.md, "Versions"); an unreadable version is 2025.3.1."""

from __future__ import annotations

import re
from dataclasses import dataclass

MEASURED = "2025.3.1"
Release = tuple[int, int]  # (year, minor): what a behaviour change is keyed on

# Options added after 2025.3.1: flag -> (the release that added it, whether it takes a value).
ADDED_OPTIONS: dict[str, tuple[Release, bool]] = {
    "--communicator": ((2026, 1), True),
    "--communicator-tcp-num-peers": ((2026, 1), True),
    "--communicator-tcp-hostname": ((2026, 1), True),
    "--communicator-tcp-port": ((2026, 1), True),
    "--communicator-shmem-num-peers": ((2026, 1), True),
    "--lockstep-kernel-launch": ((2026, 1), False),
    "--lockstep-nvtx-include": ((2026, 1), True),
    "--lockstep-nvtx-exclude": ((2026, 1), True),
    "--metric-distribution-groups": ((2026, 1), True),
    "--process-id": ((2026, 2), True),  # with --mode attach
}
COMPRESSED_REPORTS: Release = (2026, 3)  # -o NAME writes NAME.ncu-repz (zstd)
BOOST_CLOCK_DEFAULT: Release = (2026, 1)  # --clock-control's default became boost (base before)

# The newest release whose documented changes this table holds.
LATEST_KNOWN: Release = max([COMPRESSED_REPORTS, BOOST_CLOCK_DEFAULT, *(since for since, _ in ADDED_OPTIONS.values())])

REPORT_SUFFIX = ".ncu-rep"
COMPRESSED_SUFFIX = ".ncu-repz"
REPORT_SUFFIXES = (REPORT_SUFFIX, COMPRESSED_SUFFIX)  # what every reader accepts
# The clock control a campaign that sets none gets (plan/expand.py): ncu 2025.x's own default, the
# one every measurement in docs/ncu-behaviour.md was taken at, and the one NVIDIA's Profiling Guide
# describes (clocks locked to base for comparable results). Pinned, so that ncu 2026.1's new default
# (boost) does not change a campaign's numbers silently.
PINNED_CLOCK_CONTROL = "base"


def release_of(version: str | None) -> Release | None:
    """'2026.3.1.0' -> (2026, 3); None when it cannot be read."""
    match = re.match(r"^\s*(\d{4})\.(\d+)", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def release_text(release: Release) -> str:
    return f"{release[0]}.{release[1]}"


@dataclass(frozen=True)
class NcuVersion:
    """One ncu version and what ncucampaign does differently for it."""

    text: str | None  # as `ncu --version` says; None: unknown (taken as MEASURED)

    @property
    def release(self) -> Release:
        return release_of(self.text) or release_of(MEASURED) or (2025, 3)

    @property
    def name(self) -> str:
        return f"ncu {self.text or MEASURED}"

    @property
    def report_suffix(self) -> str:
        """The suffix this version gives a report by default; ncucampaign names every report with it."""
        return COMPRESSED_SUFFIX if self.release >= COMPRESSED_REPORTS else REPORT_SUFFIX

    @property
    def clock_default(self) -> str:
        return "boost" if self.release >= BOOST_CLOCK_DEFAULT else "base"

    def lacks(self, flag: str) -> Release | None:
        """The release that added `flag`, when this version is older; None when it has it (or the
        flag is not one a later release added)."""
        added = ADDED_OPTIONS.get(flag)
        return added[0] if added is not None and self.release < added[0] else None

    @property
    def multi_process(self) -> bool:
        """--communicator and --lockstep-kernel-launch: collectives profiled across ranks."""
        return self.lacks("--communicator") is None
