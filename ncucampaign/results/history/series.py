"""Runs of one campaign as series (results/history/changes.py): per target and metric, a point per run
in the order given, with the run's setting; and each series' changes, with the commits between
which to bisect. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ncucampaign.execute.rundir.manifest import Manifest
from ncucampaign.execute.rundir.status import Status
from ncucampaign.results.gate.samples import EXACT_METRICS, metric_samples
from ncucampaign.results.history.changes import Change, Point, changes, newest_confirmed, segments
from ncucampaign.results.history.reference import gpu_model
from ncucampaign.results.metrics import DURATION


@dataclass(frozen=True)
class Series:
    target: str
    metric: str
    points: tuple[Point, ...]
    changes: tuple[Change, ...]
    markers: tuple[int, ...]  # where the setting (GPU, ncu version, clock control) changed

    @property
    def newest(self) -> Change | None:
        return newest_confirmed(self.changes)


def commit_of(manifest: Manifest) -> str | None:
    git = manifest.workload_git
    return git.commit if git is not None else None


def series_of(runs: Sequence[Manifest], metrics: Sequence[str] = ()) -> list[Series]:
    """Every target's series of each metric (its duration, the exact metrics, `metrics`), `runs` in
    order; a run where the target is not ok has no point."""
    wanted = list(dict.fromkeys([DURATION, *EXACT_METRICS, *metrics]))
    names = list(dict.fromkeys(t.name for run in runs for t in run.targets))
    found = []
    for name in names:
        for metric in wanted:
            points = []
            for run in runs:
                record = next((t for t in run.targets if t.name == name and t.status == Status.OK), None)
                samples = metric_samples(record, metric) if record is not None else []
                if record is not None and samples:
                    setting = (gpu_model(run), run.ncu.version or "?", record.clock_control or "base")
                    points.append(Point(run.run_id, commit_of(run), setting, tuple(samples)))
            if len(points) >= 2:
                found.append(_series(name, metric, points))
    return found


def _series(name: str, metric: str, points: list[Point]) -> Series:
    markers = tuple(start for start, _ in segments(points)[1:])
    found = tuple(changes(points, exact=metric in EXACT_METRICS))
    return Series(name, metric, tuple(points), found, markers)


def bisect_hint(series: Series, change: Change, order: Mapping[str, int]) -> str:
    """`git bisect start BAD GOOD`, where commits between the two runs were not measured; else ''."""
    good, bad = series.points[change.at - 1].commit, series.points[change.at].commit
    if good is None or bad is None or good not in order or bad not in order:
        return ""
    between = order[bad] - order[good] - 1
    if between <= 0:
        return ""
    return f"git bisect start {bad} {good}  # {between} commit(s) between were not measured"
