"""ncu's own rule results ("findings") of every result in a report, as its reader gives them
(`IAction.rule_results_as_dicts()`), with the links of their messages turned into plain text as
`ncu --import R --page details` prints them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# Message types and speedup types of ncu_report (MsgType, SpeedupType); the words are the details page's.
MESSAGE_TYPES = {0: "NONE", 1: "OK", 2: "OPT", 3: "WARNING", 4: "ERROR"}
SPEEDUP_TYPES = {0: "unknown", 1: "local", 2: "global"}
SEVERITIES = {0: "default", 1: "low", 2: "high"}
# @url:<text>:<link>@, @sass:<address>:<text>@, @section:<id>:<text>@, @source:<file>:<line>:<text>@
_LINKS = (
    (re.compile(r"@url:([^:@]*):[^@]*@"), 1),
    (re.compile(r"@(?:sass|section):[^:@]*:([^@]*)@"), 1),
    (re.compile(r"@source:[^:@]*:[^:@]*:([^@]*)@"), 1),
)


@dataclass(frozen=True)
class RuleResult:
    ordinal: int  # the result's position in the report
    kernel: str
    rule: str  # rule identifier, e.g. SOLBottleneck
    name: str
    section: str
    title: str
    message: str
    kind: str  # OPT, WARNING, ERROR, OK, NONE
    speedup: float | None  # estimated speedup in percent, when the rule gives one
    speedup_type: str | None
    focus: tuple[tuple[str, str], ...]  # (metric, severity)


def plain(text: str) -> str:
    """A rule message with its link markup replaced by the link's text."""
    for pattern, group in _LINKS:

        def link_text(match: re.Match[str], group: int = group) -> str:
            return match.group(group)

        text = pattern.sub(link_text, text)
    return text


def rule_fields(rule: dict[str, Any]) -> dict[str, Any]:
    """One entry of `rule_results_as_dicts()` as plain fields (RuleResult's, less ordinal and kernel)."""
    message = rule.get("rule_message") or {}
    speedup = rule.get("speedup_estimation") or {}
    value = speedup.get("speedup")
    return {
        "rule": str(rule.get("rule_identifier", "")),
        "name": str(rule.get("name", "")),
        "section": str(rule.get("section_identifier", "")),
        "title": str(message.get("title", "")),
        "message": plain(str(message.get("message", ""))),
        "kind": MESSAGE_TYPES.get(int(message.get("type", 0)), "NONE"),
        "speedup": float(value) if isinstance(value, int | float) and value == value else None,
        "speedup_type": SPEEDUP_TYPES.get(int(speedup["type"])) if "type" in speedup else None,
        "focus": tuple(
            (str(metric.get("name", "")), SEVERITIES.get(int(metric.get("severity", 0)), "default"))
            for metric in rule.get("focus_metrics") or ()
        ),
    }


RULE_FAILED = "returned an error"  # "Rule Launch Configuration returned an error: Metric launch__block_size not found"


def rule_failures(rules: Sequence[tuple[str, RuleResult]]) -> tuple[set[int], list[str]]:
    """Of (target, rule result) pairs, the places of rules that failed on their result, and a note a result: a
    result whose collection failed (one pass, no metrics) makes every rule fail on it, which ranked as findings 2-4."""
    failed: dict[tuple[str, int], list[int]] = {}
    for position, (target, rule) in enumerate(rules):
        if rule.kind == "ERROR" and RULE_FAILED in rule.message:
            failed.setdefault((target, rule.ordinal), []).append(position)
    notes = [
        f"{target + ': ' if target else ''}result {ordinal} ({rules[places[0]][1].kernel}) holds no metrics its rules "
        f"need (its collection failed?): {len(places)} of ncu's rules could not run on it"
        for (target, ordinal), places in failed.items()
    ]
    return {position for places in failed.values() for position in places}, notes
