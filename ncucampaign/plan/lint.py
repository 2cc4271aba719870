"""Warnings about valid campaigns that are probably wrong: `lint_rules.RULES`, each with a stable code (NCU0xx)
that `lint_ignore:` silences, and `validate --strict` makes errors. Pure: the installed ncu's lists come in."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ncucampaign.errors import format_key_path, printable
from ncucampaign.plan.argv import ncu_flags
from ncucampaign.plan.expand import Invocation, Plan
from ncucampaign.plan.lint_rules import RULES, Context, KeyPath
from ncucampaign.plan.start_checks import Facts, Questions, Start, questions
from ncucampaign.spec.keys import OPTION_KEYS, field_name
from ncucampaign.spec.loader import LoadedCampaign
from ncucampaign.spec.model import TargetOptions
from ncucampaign.spec.ncu_catalog import InstalledNcu


@dataclass(frozen=True)
class LintWarning:
    code: str
    target: str
    path: KeyPath
    message: str
    line: int | None = None
    certain: bool = False  # ncu is sure to refuse it: an error (exit 2), not a warning
    invocations: tuple[str, ...] = ()  # the invocations it concerns (a run closes these at once when it is certain)

    def render(self, file: str) -> str:
        where = f"{file}:{self.line}" if self.line else file
        kind = "error" if self.certain else "warning"
        return printable(f"{where}: {kind} {self.code} {format_key_path(self.path)}: {self.message}")


def lint_plan(
    loaded: LoadedCampaign,
    plan: Plan,
    installed: InstalledNcu | None = None,
    facts: Facts | None = None,
) -> list[LintWarning]:
    """`facts`: what the application's machine holds, as start_questions asked (the command line looks at this
    one); without them the rules that would ask are silent."""
    warnings: dict[tuple[str, KeyPath, str], LintWarning] = {}
    concerned: dict[tuple[str, KeyPath, str], list[str]] = {}
    rules = {
        per_target: [(code, rule) for code, rule in RULES.items() if rule.per_target == per_target]
        for per_target in (False, True)
    }

    def run(context: Context, target: str, per_target: bool, names: tuple[str, ...]) -> None:
        ignored = context.options.lint_ignore or ()
        for code, rule in rules[per_target]:
            if code in ignored:
                continue
            for path, message in rule.check(context):
                where = inherited(loaded, path)
                warnings.setdefault(
                    (code, where, message), LintWarning(code, target, where, message, None, rule.certain)
                )
                concerned.setdefault((code, where, message), []).extend(names)

    by_target: dict[int, list[TargetOptions]] = {}
    names_of: dict[int, list[str]] = {}
    for inv in plan.invocations:
        by_target.setdefault(inv.target_index, []).append(inv.options)
        names_of.setdefault(inv.target_index, []).append(inv.name)
        run(_context(loaded, inv, installed, facts), inv.target, False, (inv.name,))
    for index, expansion in by_target.items():
        target = loaded.target_at(index)
        context = Context(("targets", index), expansion[0], installed, tuple(expansion), target.matrix or {})
        run(context, target.name, True, tuple(names_of[index]))
    located = [
        dataclasses.replace(w, line=loaded.line_of(w.path), invocations=tuple(dict.fromkeys(concerned[key])))
        for key, w in warnings.items()
    ]
    return sorted(located, key=lambda w: (w.line or 0, w.code))


def _context(loaded: LoadedCampaign, inv: Invocation, installed: InstalledNcu | None, facts: Facts | None) -> Context:
    """What the rules that look at one invocation see of it."""
    own_command = loaded.target_at(inv.target_index).command is not None
    start = _start(loaded, inv)
    return Context(
        ("targets", inv.target_index),
        inv.options,
        installed,
        command=start.argv,
        flags=tuple(ncu_flags(inv)) if installed is not None else (),  # only checked against an installed ncu
        command_at=("targets", inv.target_index, "command") if own_command else ("application", "command"),
        cwd=start.cwd,
        cwd_at=("application", "cwd") if start.cwd_given else None,
        search=start.search,
        facts=facts,
    )


def _start(loaded: LoadedCampaign, inv: Invocation) -> Start:
    """How the invocation's application starts, as the start checks see it."""
    return Start(inv.app_argv, inv.cwd, dict(inv.env).get("PATH"), bool(loaded.campaign.application.cwd))


def start_questions(loaded: LoadedCampaign, plan: Plan) -> Questions:
    """What the start checks (NCU013) need to know of the machine for this plan's applications."""
    return questions(_start(loaded, inv) for inv in plan.invocations)


def inherited(loaded: LoadedCampaign, path: KeyPath) -> KeyPath:
    """A target's key path, or the `defaults:` key it inherits its value from (a typo in
    defaults: was reported once per target, each at the target's line)."""
    if len(path) < 3 or path[0] != "targets" or not isinstance(path[1], int) or path[2] not in OPTION_KEYS:
        return path
    target, field = loaded.target_at(path[1]), field_name(str(path[2]))
    own = field in target.model_fields_set or path[2] in (target.matrix or {})
    if not own and field in loaded.campaign.defaults.model_fields_set:
        return ("defaults", *path[2:])
    return path
