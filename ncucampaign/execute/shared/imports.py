"""`ncu --import`: list what a report holds (its raw CSV page) and export a filtered part of it.

The launch identities compared when a shared run is verified come from ncu's own CSV on both sides
(the trace and the union report), so they are read the same way (docs/ncu-behaviour.md, "Shared runs").
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ncucampaign.execute.context import RunContext
from ncucampaign.execute.process.groups import RUN_MARKER
from ncucampaign.execute.process.short import run_captured
from ncucampaign.execute.process.signals import StopRequest

IMPORT_TIMEOUT_S = 300.0
# ncu --import is CPU-bound and short (docs/ncu-behaviour.md, "Shared runs"): one per core, within reason.
IMPORT_WORKERS = max(2, min(16, os.cpu_count() or 2))
_NVTX_COLUMN = "thread Domain:Push/Pop_Range"
_QUOTED = re.compile(r'"([^"]*)"')


@dataclass(frozen=True)
class Launch:
    """One result as ncu lists it: its ID in the report and what identifies the launch across runs."""

    id: int
    kernel: str
    grid: str
    block: str
    nvtx: tuple[str, ...]  # 'domain:range' from the bottom of the push/pop stack to its top

    @property
    def identity(self) -> tuple[str, str, str, tuple[str, ...]]:
        return (self.kernel, self.grid, self.block, self.nvtx)

    def describe(self) -> str:
        stack = "/".join(part.split(":", 1)[-1] for part in self.nvtx)
        return f"{self.kernel} grid {self.grid} block {self.block}" + (f" in {stack}" if stack else "")


class ImportFailed(Exception):
    """ncu could not import or export (its own message, first line)."""


def raw_csv_rows(text: str) -> list[dict[str, str]]:
    """Every row of `--page raw --csv` by column name, the units row included (ncu's own ==PROF==
    lines are skipped)."""
    lines = [line for line in text.splitlines() if not line.startswith("==")]
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


def parse_raw_csv(text: str) -> list[Launch]:
    """Rows of `--page raw --csv` (the units row and ncu's own ==PROF== lines are skipped)."""
    rows = raw_csv_rows(text)
    header = rows[0] if rows else {}  # a row with more fields than the header adds a None key
    nvtx_column = next((name for name in header if isinstance(name, str) and name.startswith(_NVTX_COLUMN)), None)
    launches = []
    for row in rows:
        ident = (row.get("ID") or "").strip()
        if not ident.isdigit():
            continue  # the units row
        stack = _QUOTED.findall(row.get(nvtx_column) or "") if nvtx_column else []
        launches.append(
            Launch(
                id=int(ident),
                kernel=row.get("Kernel Name") or "",
                grid=row.get("Grid Size") or "",
                block=row.get("Block Size") or "",
                nvtx=tuple(":".join(entry.split(":")[:2]) for entry in stack),
            )
        )
    return launches


@dataclass(frozen=True)
class Importer:
    """How `ncu --import` runs within a run: stopped with it (never started after a stop), and marked
    as the run's process so that a resume finds what a runner killed with -9 left (execute/resume.py)."""

    stop: StopRequest | None = None
    marker: Mapping[str, str] = field(default_factory=dict)  # RUN_MARKER for this run's processes
    timeout: float = IMPORT_TIMEOUT_S

    def run(self, argv: Sequence[str]) -> tuple[int | None, str]:
        return run_captured(argv, self.timeout, self.stop, self.marker)


def importer_of(ctx: RunContext) -> Importer:
    return Importer(ctx.stop, {RUN_MARKER: str(ctx.run.root)})


def list_launches(argv: Sequence[str], importer: Importer = Importer()) -> list[Launch]:
    code, output = importer.run(argv)
    if code != 0:
        raise ImportFailed(_why(code, output))
    return parse_raw_csv(output)


def export(argv: Sequence[str], importer: Importer = Importer()) -> tuple[int, str]:
    """Run an export; (launches exported, ncu's output). ImportFailed when ncu exported nothing."""
    code, output = importer.run(argv)
    if code != 0:
        raise ImportFailed(_why(code, output))
    return output.count("==PROF== Exported launch"), output


def _why(code: int | None, output: str) -> str:
    errors = [line for line in output.splitlines() if line.startswith("==ERROR==")]
    if errors:
        return errors[0].removeprefix("==ERROR==").strip()
    tail = output.strip().splitlines()[-1:] or ["no output"]
    return f"ncu --import exited with {code}: {tail[0][:200]}" if code is not None else tail[0][:200]
