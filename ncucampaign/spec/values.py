"""The kinds of value a campaign file holds (durations, lists given as one scalar, shell words,
environment values, device lists, commands), each with the forms it accepts. Pure."""

from __future__ import annotations

import math
import re
import shlex
from typing import Annotated, Any

import yaml
from pydantic import BeforeValidator, Field, Strict

from ncucampaign.spec.ncu_grammar import split_regex

ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h)?\s*$")
_DURATION_UNIT = {None: 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def one_or_many(value: Any) -> Any:
    """Accept a single scalar where a list is expected: `sections: SpeedOfLight`; but not a list
    written inside a string (`nvtx_include: "[decode_step/, mlp/]"`), which ncu would get as one value."""
    if isinstance(value, str):
        refuse_quoted_list(value)
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return [value]
    return value


def _comma_list(value: Any) -> Any:
    """Accept ncu's own comma-separated form too: `metrics: a,b` or `devices: "0,1"`."""
    if isinstance(value, str):
        refuse_quoted_list(value)
        return [part.strip() for part in value.split(",") if part.strip()]
    return one_or_many(value)


def quoted_list(value: str) -> list[str] | None:
    """The items of a YAML flow list written inside a string ("[a, b]"), else None."""
    text = value.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        parsed = None
    if isinstance(parsed, list) and all(isinstance(item, str | int | float) for item in parsed):
        return [str(item) for item in parsed]
    return [part.strip() for part in text[1:-1].split(",") if part.strip()]


def written_out(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def refuse_quoted_list(value: str) -> None:
    """A list in quotes is one string to YAML (validate passed it, ncu refused it for every target). NVTX
    expressions may start with '[' or end with ']', so a bracketed string is a list only with a comma."""
    items = quoted_list(value)
    if items is not None and "," in value:
        raise ValueError(f"a list inside quotes is one string here: write the list itself, {written_out(items)}")


def refuse_comma_string(value: str, what: str) -> None:
    """For values that never hold a comma or a bracket (a section identifier, a lint code): a string
    that does is a list written as one string."""
    items = quoted_list(value) or [part.strip() for part in value.split(",") if part.strip()]
    if "," in value or value.strip().startswith("["):
        raise ValueError(f"{what} holds no comma or bracket: this is a list in one string; write {written_out(items)}")


def _shell_words(value: Any) -> Any:
    """A string is split like a shell would (as `command:` is): `args: --steps 2` is two arguments."""
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise ValueError(f"cannot split {value!r} like a shell would: {exc}") from None
    return one_or_many(value)


MAX_DURATION_S = 366 * 24 * 3600.0  # a year: more is a typo, and a number too large for a float is one


def _duration(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string such as '90s', '10m', '1h'")
    if isinstance(value, str):
        match = _DURATION.match(value)
        if not match:
            raise ValueError(f"{value!r} is not a duration: use seconds (600) or '90s', '10m', '1h'")
        return _bounded(float(match.group(1)) * _DURATION_UNIT[match.group(2)])
    if isinstance(value, int | float):
        try:
            return _bounded(float(value))
        except OverflowError:
            return _bounded(math.inf)
    return value


def _bounded(seconds: float) -> float:
    if not seconds <= MAX_DURATION_S:  # also NaN and infinity
        raise ValueError(f"at most a year ({MAX_DURATION_S:.0f} seconds)")
    return seconds


def _env_value(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError('YAML read this as a boolean; quote it ("1", "true") to pass a string')
    if isinstance(value, int | float):
        return str(value)
    return value


# json_schema_input_type: the schema shows what a campaign file may hold, not the normalized value.
StrList = Annotated[tuple[str, ...], BeforeValidator(one_or_many, json_schema_input_type=str | list[str])]
CommaList = Annotated[tuple[str, ...], BeforeValidator(_comma_list, json_schema_input_type=str | list[str])]
_PositiveSeconds = Annotated[float, Field(gt=0)]
_DurationText = Annotated[str, Field(pattern=_DURATION.pattern)]
Seconds = Annotated[
    _PositiveSeconds, BeforeValidator(_duration, json_schema_input_type=_PositiveSeconds | _DurationText)
]
ShellWords = Annotated[tuple[str, ...], BeforeValidator(_shell_words, json_schema_input_type=str | list[str])]
_NonNegativeSeconds = Annotated[float, Field(ge=0)]
Delay = Annotated[
    _NonNegativeSeconds, BeforeValidator(_duration, json_schema_input_type=_NonNegativeSeconds | _DurationText)
]
# A path holds no control character: a newline in `runs_dir:` would start a line of its own in every script,
# comment and hint that names the path (the Slurm script runs it); C0, C1 and the Unicode line separators.
PATH_PATTERN = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*$"
PathText = Annotated[str, Field(pattern=PATH_PATTERN)]
EnvValue = Annotated[str, BeforeValidator(_env_value, json_schema_input_type=str | int | float)]
EnvMap = dict[Annotated[str, Field(pattern=ENV_NAME_PATTERN)], EnvValue]
WholeNumber = Annotated[int, Strict()]  # 3, never true, '3' or 3.0 (each validated as 3 or 1)
MAX_DEVICE = 1023  # a GPU index; beyond this a typo (and a number too long to print)
_Device = Annotated[int, Field(ge=0, le=MAX_DEVICE)]
Devices = Annotated[
    tuple[_Device, ...], BeforeValidator(_comma_list, json_schema_input_type=_Device | str | list[_Device])
]


def check_not_shell_quoted(value: str) -> None:
    """The manual quotes its ncu arguments for the shell (`--nvtx-include "decode_step/"`); copied into
    YAML, the quotes reach ncu and match nothing."""
    prefix = "regex:" if split_regex(value)[0] else ""
    body = value[len(prefix) :]
    if len(body) >= 2 and body[0] == body[-1] and body[0] in "\"'":
        fixed = prefix + body[1:-1]
        raise ValueError(f"the quotes are part of the value here (YAML is not a shell); write {fixed}")


def _command(value: Any) -> Any:
    if isinstance(value, list | tuple) and not value:
        raise ValueError("the command is empty")
    if isinstance(value, str) and not value.strip():
        raise ValueError("the command is empty")
    return value


Command = Annotated[tuple[str, ...] | str, BeforeValidator(_command, json_schema_input_type=list[str] | str)]
