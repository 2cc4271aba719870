"""A comparison as a CI gate reports it: one line with the outcome and its reason, a JUnit
XML file (one test case per target and metric, a failure for each verdict the gate fails on, and one
per problem) and a Markdown summary for a CI job's page. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from ncucampaign.errors import plural, printable
from ncucampaign.escaping import markdown_inline, xml_attribute, xml_text
from ncucampaign.results.gate.compare import Comparison
from ncucampaign.results.gate.folding import LISTED, folded_lines
from ncucampaign.results.gate.samples import TargetVerdict
from ncucampaign.results.gate.tables import listed_verdicts
from ncucampaign.results.gate.verdicts import Verdict
from ncucampaign.results.metrics import STANDARD_METRICS

SHOWN = 3  # targets named in the gate line per kind


def _shifted(verdicts: Sequence[TargetVerdict]) -> str:
    named = [f"{v.target} {v.shift:+.0%}" if v.shift is not None else v.target for v in verdicts[:SHOWN]]
    return ", ".join(named) + (", ..." if len(verdicts) > SHOWN else "")


def _cut(text: str, most: int = 120) -> str:
    """At most `most` characters, cut between words: a metric's name is never cut in two."""
    if len(text) <= most:
        return text
    head = text[: most + 1].rsplit(" ", 1)[0]
    return head.rstrip(",;:") + " ..."


def gate_line(comparison: Comparison, strict: bool = False, enforced: bool = True) -> str:
    """`gate: FAIL: 2 SLOWER (mlp_gemm +50%, ...)` or `gate: pass: 4 AMBIGUOUS at +1% ...`: what
    --fail-on-regression (with `strict`, --strict) decides, and why. Not `enforced` (compare without
    --fail-on-regression exits 0): `would FAIL`, which a CI log does not read as a failure that did not fail."""
    failing, problems = comparison.failing(strict), comparison.problems
    if failing or problems:
        parts = []
        for kind in (Verdict.SLOWER, Verdict.CHANGED, Verdict.AMBIGUOUS):
            these = [v for v in failing if v.verdict is kind]
            if these:
                parts.append(f"{len(these)} {kind.value} ({_shifted(these)})")
        if problems:
            more = ", ..." if len(problems) > 1 else ""
            parts.append(f"{plural(len(problems), 'problem')} ({_cut(printable(problems[0]))}{more})")
        return ("gate: FAIL: " if enforced else "gate: would FAIL with --fail-on-regression: ") + "; ".join(parts)
    parts = []
    for kind in (Verdict.FASTER, Verdict.AMBIGUOUS, Verdict.CHANGED, Verdict.SAME):
        these = [v for v in comparison.verdicts if v.verdict is kind]
        if not these:
            continue
        shifts = [v.shift for v in these if v.shift is not None]
        at = ""
        if shifts and kind is not Verdict.SAME:
            low, high = min(shifts), max(shifts)
            at = f" at {low:+.0%}" if f"{low:+.0%}" == f"{high:+.0%}" else f" at {low:+.0%} to {high:+.0%}"
        parts.append(f"{len(these)} {kind.value}{at}")
    needed = max((v.samples_needed or 0 for v in comparison.verdicts if v.verdict is Verdict.AMBIGUOUS), default=0)
    if needed:
        parts.append(f"samples: {needed} a side would decide")
    return "gate: pass: " + ("; ".join(parts) or "nothing to decide")


def gate_verdict(comparison: Comparison, strict: bool = False) -> str:
    """The gate's outcome in one word, for a CI output: a failed gate's first kind of failure in gate_line's order
    (SLOWER, CHANGED, AMBIGUOUS, then PROBLEM for a target that broke); a passed gate's most telling verdict
    (FASTER, AMBIGUOUS, CHANGED, SAME). Nothing compared is a problem, so a passed gate has verdicts."""
    failing = comparison.failing(strict)
    if failing or comparison.problems:
        kinds = {v.verdict for v in failing}
        return next((k.value for k in (Verdict.SLOWER, Verdict.CHANGED, Verdict.AMBIGUOUS) if k in kinds), "PROBLEM")
    kinds = {v.verdict for v in comparison.verdicts}
    order = (Verdict.FASTER, Verdict.AMBIGUOUS, Verdict.CHANGED, Verdict.SAME)
    return next((kind.value for kind in order if kind in kinds), Verdict.SAME.value)


def junit_xml(comparison: Comparison, strict: bool = False, suite: str = "ncucampaign compare") -> str:
    """One test case per target and metric, a <failure> for each verdict the gate fails on; each
    problem a failing case of its own."""
    failing = {id(v) for v in comparison.failing(strict)}
    cases = []
    for v in comparison.verdicts:
        name = xml_attribute(STANDARD_METRICS.get(v.metric, v.metric))
        body = ""
        if id(v) in failing:
            message = xml_attribute(f"{v.verdict.value}: {v.reason}")
            body = f"<failure message={message} type={xml_attribute(v.verdict.value)}>{xml_text(v.reason)}</failure>"
        cases.append(f"  <testcase classname={xml_attribute(v.target)} name={name}>{body}</testcase>")
    for number, problem in enumerate(comparison.problems, start=1):
        cases.append(
            f'  <testcase classname="problems" name="problem {number}">'
            f'<failure message={xml_attribute(problem)} type="problem">{xml_text(problem)}</failure></testcase>'
        )
    failures = len(failing) + len(comparison.problems)
    head = f'<testsuite name={xml_attribute(suite)} tests="{len(cases)}" failures="{failures}" errors="0">'
    return '<?xml version="1.0" encoding="utf-8"?>\n' + head + "\n" + "\n".join(cases) + "\n</testsuite>\n"


def markdown(
    comparison: Comparison, strict: bool = False, title: str = "ncucampaign compare", enforced: bool = True
) -> str:
    """The gate's outcome, the verdict counts and the verdicts but SAME as the terminal lists them (worst first, at most
    LISTED of each), for a CI job's summary page."""
    counts = {kind: sum(v.verdict is kind for v in comparison.verdicts) for kind in Verdict}
    gate = markdown_inline(gate_line(comparison, strict, enforced), cell=False)
    lines = [f"### {markdown_inline(title, cell=False)}", "", f"**{gate}**", ""]
    lines.append(", ".join(f"{n} {kind.value}" for kind, n in counts.items() if n) or "no verdict")
    shown, hidden = listed_verdicts(comparison.verdicts, every=False)
    if shown:
        lines += ["", "| target | metric | verdict | samples A/B | reason |", "|---|---|---|---|---|"]
        lines += [
            f"| {markdown_inline(v.target)} | {markdown_inline(STANDARD_METRICS.get(v.metric, v.metric))} | "
            f"{v.verdict.value} | {v.samples[0]}/{v.samples[1]} | {markdown_inline(v.reason)} |"
            for v in shown
        ]
    if hidden:  # a CI job's summary page takes 1 MiB; 20,000 verdicts made 6.5 MB
        lines += ["", f"{' and '.join(hidden)} not shown: the JUnit XML and `compare --format json` hold every one"]
    for word, said in (("problem", comparison.problems), ("note", comparison.notes)):
        folded = folded_lines(said)
        lines += [f"- {word}: {markdown_inline(line, cell=False)}" for line in folded[:LISTED]]
        if len(folded) > LISTED:
            lines.append(f"- and {len(folded) - LISTED} more {word}s")
    return "\n".join(lines) + "\n"
