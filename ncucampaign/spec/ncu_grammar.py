"""ncu's little languages (docs/ncu-behaviour.md, "Filter grammar"): the `regex:` prefix of filter values, and
NVTX expressions: 'A/' push/pop, bare 'A' start/end, '/' nesting, 'A/*/B' ranges between, 'A]' the top of the
stack, '[A' the bottom, ',' joins start/end expressions, 'Domain@' a domain, 'regex:' regular names."""

from __future__ import annotations

import re

REGEX_PREFIX = "regex:"
DEFAULT_DOMAIN = "<default domain>"  # how ncu lists a range pushed without a domain
_REGEX_META = re.compile(r"([.^$|?*+()\[\]{}\\])")


def split_regex(value: str) -> tuple[bool, str]:
    """'regex:a.*' -> (True, 'a.*'); 'name' -> (False, 'name')."""
    if value.startswith(REGEX_PREFIX):
        return True, value[len(REGEX_PREFIX) :]
    return False, value


TOO_DEEP = "nested too deeply"


def compile_regex(pattern: str) -> tuple[re.Pattern[str] | None, str | None]:
    """Python's reading of a regex: (compiled, None), or (None, why not). Never raises: a hostile
    pattern (500 nested groups) makes re.compile recurse past Python's limit."""
    try:
        return re.compile(pattern), None
    except re.error as exc:
        return None, str(exc)
    except (RecursionError, OverflowError):
        return None, TOO_DEEP


def escape_regex(text: str) -> str:
    """Escape regex metacharacters only (ncu's regex engine gives other escapes other meanings)."""
    return _REGEX_META.sub(r"\\\1", text)


def nvtx_body(expression: str) -> str:
    """An NVTX expression without its 'regex:' prefix and 'Domain@' part."""
    _, body = split_regex(expression)
    return body.split("@", 1)[1] if "@" in body else body


def is_start_end_name(expression: str) -> bool:
    """A single range name with no push/pop syntax: ncu matches it against start/end ranges only."""
    body = nvtx_body(expression)
    return bool(body) and not any(token in body for token in "/[],")


def push_pop_names(expression: str) -> list[str]:
    """The range names of a literal (non-regex) NVTX expression, split at '/' and ','."""
    body = expression.split("@", 1)[1] if "@" in expression else expression
    return re.split(r"(?<!\\)[/,]", body.strip("[]"))


def nvtx_scope(path: str) -> str:
    """An include expression for a push/pop path: 'a/b/c' -> 'a/*/c/', 'a' -> 'a/', 'D@a/b' -> 'D@a/*/b/'."""
    domain, _, stack = path.rpartition("@")
    names = stack.split("/")
    expression = f"{names[0]}/" if len(names) == 1 else f"{names[0]}/*/{names[-1]}/"
    return f"{domain}@{expression}" if domain else expression
