"""`ncu --import`: list what a report holds (its raw CSV page, read by plan/share/launches.py) and
export a filtered part of it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.process.groups import RUN_MARKER
from ncucampaign.execute.process.short import run_captured
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.plan.share.launches import Launch, garbled, parse_raw_csv

IMPORT_TIMEOUT_S = 300.0
# ncu --import is CPU-bound and short (docs/ncu-behaviour.md, "Shared runs"): one per core, within reason.
IMPORT_WORKERS = max(2, min(16, os.cpu_count() or 2))


class ImportFailed(Exception):
    """ncu could not import or export (its own message, first line)."""


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
    """What ncu lists; ImportFailed when it fails, or when what it printed is garbled (a launch lost in
    a broken row must not read as a launch that never happened)."""
    code, output = importer.run(argv)
    if code != 0:
        raise ImportFailed(_why(code, output))
    problem = garbled(output)
    if problem is not None:
        raise ImportFailed(f"ncu's listing is garbled: {problem}")
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
