"""A target's matrix: its keys and values, checked as the options they are, and the names its
combinations give (file-name-safe). Pure."""

from __future__ import annotations

import difflib
import re
from typing import Any

from pydantic import ValidationError

from ncucampaign.errors import Problem
from ncucampaign.plan.command import PlanProblems
from ncucampaign.spec.keys import OPTION_KEYS, keys_set, option_value
from ncucampaign.spec.messages import message_for
from ncucampaign.spec.model import Target, TargetOptions


def checked_matrix(target: Target, here: tuple[str | int, ...]) -> list[tuple[str, list[Any]]]:
    """Each key of the target's matrix with its values, each validated as that option; PlanProblems
    with every key that is no option, is set in the target too, or has a value that does not validate."""
    if not target.matrix:
        return []
    problems = []
    checked = []
    for key, values in target.matrix.items():
        where = (*here, "matrix", key)
        if key not in OPTION_KEYS:
            hint = difflib.get_close_matches(key, OPTION_KEYS, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            problems.append(Problem(where, f"'{key}' is not a target option{suggestion}"))
            continue
        if key in keys_set(target):
            problems.append(Problem(where, f"'{key}' is set both in the target and in its matrix"))
            continue
        validated = []
        for position, value in enumerate(values):
            try:
                option = TargetOptions.model_validate({key: value})
            except ValidationError as exc:
                message = message_for(exc.errors(include_url=False)[0], (*where, position))
                problems.append(Problem((*where, position), message))
                continue
            validated.append(option_value(option, key))
        checked.append((key, validated))
    if problems:
        raise PlanProblems(problems)
    return checked


def slug(value: Any) -> str:
    """A matrix value as a file-name-safe name part: '::(4|8)' -> '4_8', ['A', 'B'] -> 'A_B'."""
    if isinstance(value, bool):
        text = "on" if value else "off"
    elif isinstance(value, list | tuple):
        text = "_".join(slug(item) for item in value)
    else:
        text = str(value)
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.-") or "x"


def expanded_name(template: str, chosen: tuple[tuple[str, Any], ...]) -> str:
    """A matrix combination's name: the template's {key} placeholders filled, else the values appended."""
    if not chosen:
        return template
    if "{" in template:
        values = {key: slug(value) for key, value in chosen}
        return re.sub(r"\{([^{}]*)\}", lambda m: values[m.group(1)], template)
    return "-".join([template, *(slug(value) for _, value in chosen)])
