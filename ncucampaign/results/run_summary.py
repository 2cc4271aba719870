"""What a run's closing lines say at any size: one tally of the statuses, each cause that closed several targets once
with its count, which targets a folded table shows, and where the run's own seconds went when they were a good part
of it. Pure."""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ncucampaign.errors import printable
from ncucampaign.execute.rundir.manifest import Manifest, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.share.text import short_names

FOLD_AT = 50  # over this many targets, the per-target lines and the table show what is not ok, and count the rest
CAUSE_AT = 3  # a message that closed at least this many targets is said once, with the count
OWN_SHARE = 0.10  # the run's own seconds are broken down when they were more than this share of it


def tally_line(manifest: Manifest) -> str:
    """'1000 targets: 998 ok, 1 no_kernels, 1 app_failed' (ok first, then by count)."""
    counts = Counter(record.status.value for record in manifest.targets)
    order = sorted(counts, key=lambda status: (status != Status.OK.value, -counts[status], status))
    noun = "target" if len(manifest.targets) == 1 else "targets"
    return f"{len(manifest.targets)} {noun}: " + ", ".join(f"{counts[status]} {status}" for status in order)


@dataclass(frozen=True)
class Cause:
    status: Status
    message: str
    names: tuple[str, ...]

    def line(self) -> str:
        return printable(f"{len(self.names)} targets {self.status.value} ({short_names(self.names)}): {self.message}")


def causes(targets: Sequence[TargetRecord]) -> list[Cause]:
    """The messages that closed at least CAUSE_AT targets that are not ok, most targets first."""
    found: dict[tuple[Status, str], list[str]] = {}
    for record in targets:
        if record.status != Status.OK and record.message:
            found.setdefault((record.status, record.message), []).append(record.name)
    shared = [Cause(status, message, tuple(names)) for (status, message), names in found.items()]
    return sorted((c for c in shared if len(c.names) >= CAUSE_AT), key=lambda c: -len(c.names))


def folded(targets: Sequence[TargetRecord], every: bool = False) -> tuple[list[TargetRecord], int]:
    """The targets a table shows, and how many ok ones it leaves out: all of them up to FOLD_AT (or `every`), else
    those not ok."""
    if every or len(targets) <= FOLD_AT:
        return list(targets), 0
    shown = [record for record in targets if record.status != Status.OK]
    return shown, len(targets) - len(shown)


def own_time_line(manifest: Manifest, took: float | None = None) -> str | None:
    """Where the run's own seconds went, by phase, when they were over OWN_SHARE of its wall time (`took`: this
    process's seconds, start-up included as its own seconds include it; else the manifest's times, whole seconds: a
    run of a second said '1.2 s of this run's 1.0 s (116%)'); else None."""
    own = manifest.own_seconds or {}
    took = took or _wall_seconds(manifest)
    spent = sum(own.values())
    if not took or spent <= OWN_SHARE * took:
        return None
    phases = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in sorted(own.items(), key=lambda kv: -kv[1]))
    return f"own time: {spent:.1f} s of this run's {took:.1f} s ({spent / took:.0%}) were ncucampaign's: {phases}"


def _wall_seconds(manifest: Manifest) -> float | None:
    if manifest.ended_at is None:
        return None
    try:
        started = datetime.datetime.fromisoformat(manifest.started_at)
        ended = datetime.datetime.fromisoformat(manifest.ended_at)
    except ValueError:
        return None
    return max(0.0, (ended - started).total_seconds())
