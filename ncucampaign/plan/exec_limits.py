"""Whether each invocation can be started at all: Linux passes a program at most ARG_MAX bytes of command line
and environment together (MAX_ARG_STRLEN per string: spec/yaml_lines.py); beyond it a campaign validates but
cannot run ("Argument list too long"). Pure: the limit and the inherited environment's size are the caller's."""

from __future__ import annotations

from collections.abc import Sequence

from ncucampaign.errors import Problem
from ncucampaign.plan.argv import ncu_options
from ncucampaign.plan.expand import Invocation

REPORT_PATH_BYTES = 4096  # what `-f -o <run dir>/reports/<name>.ncu-rep` may add to a command line (PATH_MAX)


def exec_size_problems(invocations: Sequence[Invocation], limit: int, inherited: int) -> list[Problem]:
    """Invocations whose command line and environment, with the `inherited` bytes of the environment
    they start from, exceed what the system passes to a program (`limit`: ARG_MAX): `run` would
    fail with "Argument list too long". Counted as the kernel counts: each string and its NUL."""
    problems = []
    for inv in invocations:
        words = [*ncu_options(inv), *inv.app_argv]
        # One encode of the words joined by their NULs (the last NUL the +1): 10,000 invocations' 200,000 words
        # were a fifth of this check one by one.
        own = len("\0".join(words).encode()) + 1 + REPORT_PATH_BYTES
        own += sum(len(name.encode()) + len(value.encode()) + 2 for name, value in inv.env)
        if own + inherited > limit:
            key = "env" if inv.env else "args"
            problems.append(
                Problem(
                    ("targets", inv.target_index, key),
                    f"{inv.name}: its command line and environment take {own + inherited:,} bytes ({own:,} of "
                    f"them the campaign's), more than this system passes to a program ({limit:,}, ARG_MAX): "
                    "ncu could not start; shorten its env or args",
                )
            )
    return problems
