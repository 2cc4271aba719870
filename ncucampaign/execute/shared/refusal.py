"""A union ncu could not profile one kernel of: the members whose filters may select that kernel, apart from the rest
(the cause may be one of theirs, such as a section one asks for, so they share on and are halved while they fail).
Halving a failed union by position put the refused kernel's members in both halves, both failed as the union did,
and every member ran alone (200 targets, half of them on a kernel ncu refuses: 204 application starts where each
alone takes 200). Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ncucampaign.execute.attempt.classify import ConsoleSummary
from ncucampaign.plan.expand import Invocation
from ncucampaign.spec.ncu_grammar import compile_regex, split_regex

_FAILED_TO_PROFILE = re.compile(r'^Failed to profile "(.+?)"')


def refused_kernel(console: ConsoleSummary) -> str | None:
    """The kernel ncu says it failed to profile (`==ERROR== Failed to profile "<kernel>" in process <pid>`), if one."""
    for line in console.errors:
        found = _FAILED_TO_PROFILE.match(line)
        if found:
            return found.group(1).removesuffix("...")  # ncu cuts a long name
    return None


def may_select(member: Invocation, kernel: str) -> bool:
    """Whether the member's kernel filter may let `kernel` through (printed, perhaps cut short): no filter, a regex
    that finds it, or a name it may be the start of. Only a member that surely cannot is innocent."""
    value = member.options.kernel_name
    if value is None:
        return True
    is_regex, body = split_regex(value)
    if not is_regex:
        return body == kernel or body.startswith(kernel)
    pattern, _ = compile_regex(body)
    return pattern is None or pattern.search(kernel) is not None


def apart(members: Sequence[Invocation], kernel: str | None) -> tuple[list[Invocation], list[Invocation]] | None:
    """(the members that cannot select `kernel`, those that may), when both are there; None otherwise."""
    if kernel is None:
        return None
    suspects = [m for m in members if may_select(m, kernel)]
    innocent = [m for m in members if not may_select(m, kernel)]
    return (innocent, suspects) if innocent and suspects else None
