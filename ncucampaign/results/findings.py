"""What to fix first: ncu's rule results across a run (or one report), one finding on many kernels grouped,
ranked by what it would gain the application (ncu's estimated speedup times the kernel's share of GPU time, when
weighed) or else by ncu's estimated speedup. Pure apart from reading the reports."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ncucampaign.errors import ReportUnreadable, UsageError
from ncucampaign.execute.rundir.manifest import Manifest
from ncucampaign.results.reading.isolated import read_launches, read_rule_results
from ncucampaign.results.reading.rules import RuleResult, rule_failures
from ncucampaign.results.reading.runs import LoadedRun, load_run
from ncucampaign.results.weights import GainTerm, gain_terms, percent, total_gain, weighed_as
from ncucampaign.spec.ncu_versions import REPORT_SUFFIXES

# Messages that are findings (something to act on); OK and NONE messages are informative.
ACTIONABLE = ("ERROR", "WARNING", "OPT")


@dataclass(frozen=True)
class Finding:
    target: str  # the target whose report holds it ('' for a single report)
    rule: RuleResult
    symbol: str = ""  # the result's mangled name, when known: what GPU-time shares are keyed by

    @property
    def weighed_as(self) -> str:
        return self.symbol or self.rule.kernel


@dataclass(frozen=True)
class FindingGroup:
    """One finding (rule and title) and every result it was reported for, best estimated speedup first;
    with GPU-time shares, what it would gain the application, kernel by kernel."""

    occurrences: tuple[Finding, ...]
    terms: tuple[GainTerm, ...] = ()

    @property
    def gain(self) -> float | None:
        return total_gain(self.terms)

    @property
    def first(self) -> RuleResult:
        return self.occurrences[0].rule

    @property
    def best_speedup(self) -> float | None:
        return max((f.rule.speedup for f in self.occurrences if f.rule.speedup is not None), default=None)

    @property
    def kernels(self) -> list[str]:
        return list(dict.fromkeys(f.rule.kernel for f in self.occurrences))

    @property
    def targets(self) -> list[str]:
        return list(dict.fromkeys(f.target for f in self.occurrences if f.target))


def rank(
    findings: Iterable[Finding],
    include_ok: bool = False,
    shares: Mapping[str, float] | None = None,
    names: Mapping[str, str] | None = None,
) -> list[FindingGroup]:
    """Grouped by rule and title; errors and warnings and suggestions before informative messages,
    then (with `shares`, symbol -> share of GPU time; `names`, symbol -> readable name) by estimated
    application gain, then by estimated speedup (largest first, none last), then by how often."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        if include_ok or finding.rule.kind in ACTIONABLE:
            groups.setdefault((finding.rule.rule, finding.rule.title), []).append(finding)
    ranked = [_group(found, shares, names) for found in groups.values()]
    return sorted(
        ranked,
        key=lambda g: (
            g.first.kind not in ACTIONABLE,
            g.gain is None,
            -(g.gain or 0.0),
            g.best_speedup is None,
            -(g.best_speedup or 0.0),
            -len(g.occurrences),
        ),
    )


def recorded_findings(manifest: Manifest) -> list[Finding]:
    """The findings the manifest recorded for every result (no report is read)."""
    return [
        Finding(
            target.name,
            RuleResult(
                ordinal=result.index,
                kernel=result.kernel,
                rule=f.rule,
                name=f.name,
                section=f.section,
                title=f.title,
                message=f.message,
                kind=f.type,
                speedup=f.estimated_speedup,
                speedup_type=f.speedup_type,
                focus=tuple((metric, "") for metric in f.focus_metrics),
            ),
            weighed_as(result),
        )
        for target in manifest.targets
        for result in target.results
        for f in result.findings
    ]


def is_report_path(path: Path) -> bool:
    """A report file (findings of one report), not a run directory or its campaign's folder."""
    return path.suffix in REPORT_SUFFIXES or (path.is_file() and path.name != "manifest.json")


NO_RULES = "ncu's rules did not run (a metrics-only target collects no sections, so no rule results)"


@dataclass
class FindingsRead:
    found: list[Finding] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # reports that could not be read: exit 2
    unread: list[str] = field(default_factory=list)  # targets without rule results to read, and why


def findings_of(path: Path, ncu: str | None = None, run: LoadedRun | None = None) -> FindingsRead:
    """The findings of a report, or of each target's report in a run (`run`: loaded, e.g. with a Slurm array's
    records collected); the reports that could not be read, and the targets whose reports hold no rule results."""
    if is_report_path(path):
        if not path.is_file():
            raise UsageError(f"{path}: no such report")
        return without_rule_failures(FindingsRead([Finding("", rule) for rule in rules_of(path, ncu)]))
    run = run if run is not None else load_run(path)
    result = FindingsRead()
    found, unreadable, unread = result.found, result.unreadable, result.unread
    read: dict[str, list[RuleResult] | ReportUnreadable] = {}  # a shared run's report is read once for its members
    for record in run.manifest.targets:
        if record.report is None:
            continue
        if not record.collects_sections:  # ncu runs its rules on the sections it collects
            unread.append(f"{record.name}: {NO_RULES}")
            continue
        if record.report.path not in read:
            try:
                read[record.report.path] = rules_of(run.file(record.report.path), ncu)
            except ReportUnreadable as exc:
                read[record.report.path] = exc
        rules = read[record.report.path]
        if isinstance(rules, ReportUnreadable):
            unreadable.append(f"{record.name}: {rules}")
            continue
        if record.report.ids is not None:  # read out of a shared run's report: its results, numbered as its own
            places = {result_id: own for own, result_id in enumerate(record.report.ids)}
            rules = [replace(rule, ordinal=places[rule.ordinal]) for rule in rules if rule.ordinal in places]
        symbols = {result.index: weighed_as(result) for result in record.results}
        found.extend(Finding(record.name, rule, symbols.get(rule.ordinal, "")) for rule in rules)
    return without_rule_failures(result)


def without_rule_failures(read: FindingsRead) -> FindingsRead:
    """Rules that failed on a result (reading/rules.py rule_failures) are no findings: said once a result instead."""
    failed, notes = rule_failures([(f.target, f.rule) for f in read.found])
    kept = [f for position, f in enumerate(read.found) if position not in failed]
    return FindingsRead(kept, read.unreadable, [*read.unread, *notes]) if failed else read


def rules_of(report: Path, ncu: str | None) -> list[RuleResult]:
    """ncu's rule results of a report; ReportUnreadable when it holds no result at all (an empty,
    truncated or foreign file reads as no rules, which is not "nothing to act on")."""
    rules = read_rule_results(report, ncu)
    if not rules and not read_launches(report, ncu):
        raise ReportUnreadable(f"{report}: holds no results (empty, truncated, or not a report)")
    return rules


def _group(found: list[Finding], shares: Mapping[str, float] | None, names: Mapping[str, str] | None) -> FindingGroup:
    """A finding's occurrences, first the one the heading quotes: with shares, that of the kernel whose gain leads (the
    heading quoted another kernel's speedup than the gain line named), then by estimated speedup."""
    terms = tuple(gain_terms(((f.weighed_as, f.rule.speedup) for f in found), shares, names)) if shares else ()
    leading = {term.kernel: position for position, term in enumerate(terms) if term.gain is not None}
    ordered = sorted(
        found,
        key=lambda f: (
            leading.get(f.weighed_as, len(leading)),
            -(f.rule.speedup if f.rule.speedup is not None else -1.0),
        ),
    )
    return FindingGroup(tuple(ordered), terms)


def group_text(position: int, group: FindingGroup) -> list[str]:
    """A finding as a few plain lines (readable in a terminal and in a pipe)."""
    rule = group.first
    speedup = (
        f"est. speedup {percent(rule.speedup)} ({rule.speedup_type})" if rule.speedup is not None else "no estimate"
    )
    return [
        f"{position}. {rule.title or rule.name}  [{rule.kind}, {rule.rule}, section {rule.section}]  {speedup}",
        *gain_lines(group),
        f"   {where_found(group)}",
        # the kernels to act on, the gain's first; "kernel: K (and 8 more)" named one of moe_train's nine
        ("   kernel: " if len(group.kernels) == 1 else "   kernels: ") + first_few(group.kernels),
        f"   {rule.message}",
    ]


def where_found(group: FindingGroup) -> str:
    """'11 result(s) of 9 kernel(s) in targets a, b, ... and 6 more' (discover names targets after kernels: the
    word says which is which)."""
    where = f"{len(group.occurrences)} result(s) of {len(group.kernels)} kernel(s)"
    if group.targets:
        where += (" in target " if len(group.targets) == 1 else " in targets ") + first_few(group.targets)
    return where


def first_few(names: Sequence[str], shown: int = 5) -> str:
    """'a, b, c, d, e and 6 more'."""
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def gain_lines(group: FindingGroup) -> list[str]:
    """The application gain with its arithmetic (none without shares)."""
    if group.gain is not None:
        return [f"   est. application gain {percent(group.gain)} of GPU time = {gain_arithmetic(group)}"]
    if group.terms:
        return ["   est. application gain unknown: the timing pass did not time its kernel(s)"]
    return []


def gain_arithmetic(group: FindingGroup, shown: int | None = 3) -> str:
    """'36% x 20.9% of GPU time = 7.61% for K + ...': the terms with a share (`shown` of them)."""
    known = [t for t in group.terms if t.gain is not None]
    kept = known if shown is None else known[:shown]
    words = [t.arithmetic() for t in kept] + ([f"{len(known) - len(kept)} more"] if len(known) > len(kept) else [])
    return " + ".join(words)


def finding_data(group: FindingGroup, charts: Mapping[tuple[str, int], object] | None = None) -> dict[str, object]:
    """`charts`: (target, result) -> the result's chart numbers (results.roofline.chart_data)."""
    rule = group.first
    charts = charts or {}
    return {
        "application_gain_pct": group.gain,
        "gain_terms": [
            {"kernel": t.kernel, "speedup_pct": t.speedup, "gpu_time_share": t.share, "gain_pct": t.gain}
            for t in group.terms
        ],
        "rule": rule.rule,
        "name": rule.name,
        "section": rule.section,
        "title": rule.title,
        "type": rule.kind,
        "message": rule.message,
        "estimated_speedup": rule.speedup,
        "speedup_type": rule.speedup_type,
        "focus_metrics": [{"metric": m, "severity": s} for m, s in rule.focus],
        "occurrences": [
            {
                "target": f.target,
                "result": f.rule.ordinal,
                "kernel": f.rule.kernel,
                "estimated_speedup": f.rule.speedup,
                "gpu_time_share": next((t.share for t in group.terms if t.kernel == f.weighed_as), None),
                "charts": charts.get((f.target, f.rule.ordinal)),
            }
            for f in group.occurrences
        ],
    }


def shares_of_shown(groups: Sequence[FindingGroup]) -> float | None:
    """The GPU-time share of the distinct kernels the groups name (each counted once: at most 1)."""
    shares = {t.kernel: t.share for g in groups for t in g.terms if t.share is not None}
    return sum(shares.values()) if shares else None
