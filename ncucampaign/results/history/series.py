"""Runs of one campaign as series (results/history/changes.py): per target and metric, a point per run in the order
given, with the run's setting; and each series' changes, with the commits between which to bisect. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ncucampaign.execute.rundir.manifest import GitInfo, Manifest, TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.results.gate.samples import EXACT_METRICS, metric_samples
from ncucampaign.results.history.changes import Change, Point, changes, newest_confirmed, segments
from ncucampaign.results.history.reference import gpu_model
from ncucampaign.results.units import base_value
from ncucampaign.spec.ncu_catalog import DURATION


@dataclass(frozen=True)
class Series:
    target: str
    metric: str
    points: tuple[Point, ...]
    changes: tuple[Change, ...]
    markers: tuple[int, ...]  # where the setting (GPU, ncu version, clock control) changed
    unit: str = ""  # of every sample: the metric's base unit (results/units.py), `second` for a duration

    @property
    def newest(self) -> Change | None:
        return newest_confirmed(self.changes)


def commit_of(manifest: Manifest | RunDigest) -> str | None:
    git = manifest.workload_git
    return git.commit if git is not None else None


@dataclass(frozen=True)
class RunDigest:
    """What history needs of one run, without the run: its place (id, time, commit) and, per target and metric, the
    samples and their setting (20,000 targets of 9 runs held whole took 3.4 GB; this is their numbers)."""

    run_id: str
    campaign: str
    started_at: str
    workload_git: GitInfo | None
    names: tuple[str, ...]  # its targets, in order
    samples: Mapping[tuple[str, str], tuple[tuple[str, str, str], tuple[float, ...], str]]  # setting, samples, unit


def digest(manifest: Manifest, metrics: Sequence[str] = ()) -> RunDigest:
    """The run's digest for the metrics `series_of` reads (its duration, the exact metrics, `metrics`)."""
    found: dict[tuple[str, str], tuple[tuple[str, str, str], tuple[float, ...], str]] = {}
    model, version = gpu_model(manifest), manifest.ncu.version or "?"
    for record in manifest.targets:
        if record.status != Status.OK:
            continue
        for metric in wanted_metrics(metrics):
            samples = metric_samples(record, metric)
            if samples:
                setting = (model, version, record.clock_control or "base")
                found[record.name, metric] = (setting, tuple(samples), _unit(record, metric))
    names = tuple(record.name for record in manifest.targets)
    return RunDigest(manifest.run_id, manifest.campaign.name, manifest.started_at, manifest.workload_git, names, found)


def wanted_metrics(metrics: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([DURATION, *EXACT_METRICS, *metrics]))


def series_of(runs: Sequence[Manifest | RunDigest], metrics: Sequence[str] = ()) -> list[Series]:
    """Every target's series of each metric (its duration, the exact metrics, `metrics`), `runs` in
    order; a run where the target is not ok has no point."""
    digests = [run if isinstance(run, RunDigest) else digest(run, metrics) for run in runs]
    names = list(dict.fromkeys(name for run in digests for name in run.names))
    found = []
    for name in names:
        for metric in wanted_metrics(metrics):
            points, unit = [], ""
            for run in digests:
                known = run.samples.get((name, metric))
                if known is not None:
                    setting, samples, its_unit = known
                    points.append(Point(run.run_id, commit_of(run), setting, samples))
                    unit = unit or its_unit
            if len(points) >= 2:
                found.append(_series(name, metric, points, unit))
    return found


def _unit(record: TargetRecord, metric: str) -> str:
    for result in record.results:
        found = base_value(result, metric)
        if found is not None:
            return found[1]
    return ""


def _series(name: str, metric: str, points: list[Point], unit: str) -> Series:
    markers = tuple(start for start, _ in segments(points)[1:])
    found = tuple(changes(points, exact=metric in EXACT_METRICS))
    return Series(name, metric, tuple(points), found, markers, unit)


def where(s: Series, at: int) -> str:
    """A point's run, with its commit where known."""
    point = s.points[at]
    return point.run + (f" ({point.commit[:10]})" if point.commit else "")


def change_text(s: Series, change: Change) -> str:
    """`mlp launch__registers_per_thread: CHANGED at <run> (<commit>), 25 -> 168`: as the text output and
    the page say it."""
    shift = f"{change.shift:+.1%}" if change.shift is not None else f"{change.before:g} -> {change.after:g}"
    return f"{s.target} {s.metric}: {change.verdict} at {where(s, change.at)}, {shift}"


def bisect_hint(series: Series, change: Change, order: Mapping[str, int]) -> str:
    """`git bisect start BAD GOOD`, where commits between the two runs were not measured; else ''."""
    good, bad = series.points[change.at - 1].commit, series.points[change.at].commit
    if good is None or bad is None or good not in order or bad not in order:
        return ""
    between = order[bad] - order[good] - 1
    if between <= 0:
        return ""
    return f"git bisect start {bad} {good}  # {between} commit(s) between were not measured"
