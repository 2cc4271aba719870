"""Compare two runs of a campaign: targets matched by name, results by order. Pure."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ncucampaign.errors import plural
from ncucampaign.execute.rundir.manifest import Manifest, TargetRecord
from ncucampaign.execute.rundir.result_records import ResultRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.results.gate.samples import TargetVerdict, target_verdicts
from ncucampaign.results.gate.verdicts import ALPHA, SIZE_THRESHOLD, THRESHOLD, Verdict, clocks_differ
from ncucampaign.results.metrics import SM_FREQUENCY, STANDARD_METRICS
from ncucampaign.results.units import base_unit, base_value, not_finite
from ncucampaign.spec.ncu_catalog import DURATION


@dataclass(frozen=True)
class Change:
    target: str
    result: int
    kernel: str
    metric: str
    unit: str
    before: float
    after: float
    relative: float | None  # (after - before) / before; None when before is 0
    flagged: bool  # beyond the threshold, either way
    regression: bool  # a duration that grew beyond the threshold


@dataclass(frozen=True)
class Comparison:
    changes: tuple[Change, ...]
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    notes: tuple[str, ...]  # environment differences and unmatched results
    # What a CI gate must fail on besides regressions: a target no longer ok, a target gone, nothing
    # compared, a --metric that neither run holds.
    problems: tuple[str, ...] = ()
    # ncu's findings (rule: title) per target that B has and A had not, and the other way round.
    findings_appeared: tuple[str, ...] = ()
    findings_disappeared: tuple[str, ...] = ()
    # Per target in both runs: what its samples say (results/gate/samples.py).
    verdicts: tuple[TargetVerdict, ...] = ()
    # Targets whose verdicts a gate does not fail on (a reference's `xfail:` and `gate: soft`).
    excused: frozenset[str] = frozenset()

    @property
    def regressions(self) -> tuple[Change, ...]:
        """Values beyond the threshold, one sample a side: shown, no longer what a gate fails on."""
        return tuple(change for change in self.changes if change.regression)

    def failing(self, strict: bool = False) -> tuple[TargetVerdict, ...]:
        """The verdicts `--fail-on-regression` fails on: SLOWER; with `strict`, AMBIGUOUS and CHANGED too."""
        bad = {Verdict.SLOWER, Verdict.AMBIGUOUS, Verdict.CHANGED} if strict else {Verdict.SLOWER}
        return tuple(v for v in self.verdicts if v.verdict in bad and v.target not in self.excused)

    def failed(self, strict: bool = False) -> bool:
        """What `--fail-on-regression` exits 1 for: a SLOWER verdict, a target that broke or went missing,
        nothing compared, a --metric neither run holds (and with `strict`, any undecided verdict)."""
        return bool(self.failing(strict) or self.problems)


def compare_runs(
    a: Manifest,
    b: Manifest,
    threshold: float = 0.1,
    metrics: Sequence[str] = (),
    gate: tuple[float, float, float] = (THRESHOLD, ALPHA, SIZE_THRESHOLD),
) -> Comparison:
    """Targets matched by name, results by order; `metrics` adds to the standard ones. `threshold` flags single values;
    `gate` is the verdicts' practical threshold, significance level and the size that decides without a test."""
    notes = list(_environment_notes(a, b))
    by_name_b = {target.name: target for target in b.targets}
    names_a = [target.name for target in a.targets]
    known_a = set(names_a)  # once: a set per target made compare quadratic (20,000 targets: 60 s)
    wanted = tuple(dict.fromkeys([*STANDARD_METRICS, *metrics]))
    changes: list[Change] = []
    verdicts: list[TargetVerdict] = []
    unconverted: list[str] = []  # values whose units do not convert: not compared, and a gate fails
    for target_a in a.targets:
        target_b = by_name_b.get(target_a.name)
        if target_b is not None:
            changes += _compare_target(target_a, target_b, wanted, threshold, (notes, unconverted))
            verdicts += target_verdicts(target_a, target_b, *gate)
    only_in_a = tuple(name for name in names_a if name not in by_name_b)
    appeared, disappeared = _finding_changes(a, b)
    return Comparison(
        changes=tuple(changes),
        only_in_a=only_in_a,
        only_in_b=tuple(target.name for target in b.targets if target.name not in known_a),
        notes=tuple(notes),
        problems=(*dict.fromkeys(unconverted), *_problems(a, b, changes, only_in_a, metrics)),
        findings_appeared=appeared,
        findings_disappeared=disappeared,
        verdicts=tuple(verdicts),
    )


def _finding_changes(a: Manifest, b: Manifest) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Per target present in both runs: the findings (rule: title) one run has and the other has not."""

    def findings(target: TargetRecord) -> list[str]:
        found = (f"{f.rule}: {f.title or f.name}" for r in target.results for f in r.findings if f.type != "OK")
        return list(dict.fromkeys(found))

    by_name_b = {target.name: target for target in b.targets}
    appeared: list[str] = []
    disappeared: list[str] = []
    for target_a in a.targets:
        target_b = by_name_b.get(target_a.name)
        if target_b is None:
            continue
        before, after = findings(target_a), findings(target_b)
        appeared += [f"{target_a.name}: {f}" for f in after if f not in before]
        disappeared += [f"{target_a.name}: {f}" for f in before if f not in after]
    return tuple(appeared), tuple(disappeared)


def _problems(
    a: Manifest, b: Manifest, changes: list[Change], only_in_a: Sequence[str], metrics: Sequence[str]
) -> Iterable[str]:
    by_name_b = {target.name: target for target in b.targets}
    for target in a.targets:
        after = by_name_b.get(target.name)
        if target.status == Status.OK and after is not None and after.status != Status.OK:
            yield f"{target.name}: ok in A, {after.status.value} in B ({after.message})"
        elif target.status == Status.OK and after is not None and target.results and not after.results:
            yield f"{target.name}: ok in both, but B holds none of its results (A holds {len(target.results)})"
    for name in only_in_a:
        yield f"{name}: in A, missing from B"
    held = sorted({name for run in (a, b) for t in run.targets for result in t.results for name in result.metrics})
    for metric in metrics:
        if metric not in held:
            close = difflib.get_close_matches(metric, held, n=3, cutoff=0.6)
            more = ", ..." if len(held) > 5 else ""
            offer = f"did you mean {', '.join(close)}?" if close else f"they hold {', '.join(held[:5]) or 'none'}{more}"
            yield f"--metric {metric}: neither run holds this metric; {offer}"
    if not changes:
        yield "no values were compared: the runs share no target with results"


def _compare_target(
    target_a: TargetRecord,
    target_b: TargetRecord,
    wanted: Sequence[str],
    threshold: float,
    told: tuple[list[str], list[str]],
) -> list[Change]:
    """The changes of one target's results; `told`: the notes and the problems, added to."""
    told[0].extend(_target_notes(target_a, target_b))
    changes = []
    for result_a, result_b in zip(target_a.results, target_b.results, strict=False):
        if result_a.kernel != result_b.kernel:
            told[0].append(f"{target_a.name}[{result_a.index}]: kernel {result_a.kernel} in A, {result_b.kernel} in B")
        for metric in wanted:
            if metric not in result_a.metrics or metric not in result_b.metrics:  # the common case, cheaply
                continue
            found = _comparable(target_a.name, result_a, result_b, metric, told)
            if found is None:
                continue
            before, after = found
            relative = (after - before) / before if before else None
            flagged = relative is not None and abs(relative) > threshold
            changes.append(
                Change(
                    target=target_a.name,
                    result=result_a.index,
                    kernel=result_a.kernel,
                    metric=metric,
                    unit=result_a.metrics[metric].unit,
                    before=before,
                    after=after,
                    relative=relative,
                    flagged=flagged,
                    regression=flagged and metric == DURATION and after > before,
                )
            )
    return changes


def _target_notes(target_a: TargetRecord, target_b: TargetRecord) -> list[str]:
    """What to say of a target before its results are compared: a status other than ok, the clocks,
    results of other counts."""
    runs = ((target_a.status, "A"), (target_b.status, "B"))
    notes = [f"{target_a.name}: {status.value} in run {run}" for status, run in runs if status != Status.OK]
    notes.extend(_clock_notes(target_a, target_b))
    if len(target_a.results) != len(target_b.results):
        notes.append(
            f"{target_a.name}: {plural(len(target_a.results), 'result')} in A, {len(target_b.results)} in B; "
            "only the first ones are compared"
        )
    return notes


def _comparable(
    name: str, result_a: ResultRecord, result_b: ResultRecord, metric: str, told: tuple[list[str], list[str]]
) -> tuple[float, float] | None:
    """A's and B's value in A's unit (B's converted: `us` against `ns` is the same quantity); None, with
    a note, for a value that is no finite number, and with a problem for units that do not convert."""
    a, b = base_value(result_a, metric), base_value(result_b, metric)
    where = f"{name}[{result_a.index}]: {metric}"
    if a is None or b is None:
        sides = [side for side, r in (("A", result_a), ("B", result_b)) if not_finite(r, metric)]
        if sides:
            told[0].append(f"{where} is not a finite number in {' and '.join(sides)}; not compared")
        return None
    if a[1] != b[1]:
        units = (result_a.metrics[metric].unit, result_b.metrics[metric].unit)
        told[1].append(f"{where} is in {units[0]!r} in A and {units[1]!r} in B: units that do not convert")
        return None
    factor, _ = base_unit(result_a.metrics[metric].unit)
    return a[0] / factor, b[0] / factor


def _clock_notes(target_a: TargetRecord, target_b: TargetRecord) -> Iterable[str]:
    """Results taken at different clocks: durations differ for that alone (ncu 2026.1 changed its
    default clock control from base to boost; ncucampaign pins base where a campaign sets none)."""
    clocks = (target_a.clock_control, target_b.clock_control)
    if None not in clocks and clocks[0] != clocks[1]:
        yield (
            f"warning: {target_a.name}: clock control {clocks[0]} in A, {clocks[1]} in B; durations are not comparable"
        )
    for result_a, result_b in zip(target_a.results, target_b.results, strict=False):
        before, after = result_a.value(SM_FREQUENCY), result_b.value(SM_FREQUENCY)
        if before and after and clocks_differ(before, after):
            yield (
                f"warning: {target_a.name}[{result_a.index}]: SM frequency {before / 1e9:.2f} GHz in A, "
                f"{after / 1e9:.2f} GHz in B; durations are not comparable"
            )


def _environment_notes(a: Manifest, b: Manifest) -> Iterable[str]:
    def gpus(manifest: Manifest) -> str:
        return ", ".join(sorted({g.name for g in manifest.gpus or []})) or "unknown"

    def drivers(manifest: Manifest) -> str:
        return ", ".join(sorted({g.driver_version for g in manifest.gpus or []})) or "unknown"

    for what, left, right in (
        ("GPU", gpus(a), gpus(b)),
        ("driver", drivers(a), drivers(b)),
        ("ncu version", a.ncu.version or "unknown", b.ncu.version or "unknown"),
    ):
        if left != right:
            yield f"warning: the {what} differs: {left} in A, {right} in B; numbers may not be comparable"
