"""YAML text -> plain data, and the line of every key path, within bounds a hostile file cannot break
(docs/campaigns.md, "Limits"): file size, nesting depth, values after aliases expand (a few hundred bytes can
stand for billions), a string's length (MAX_ARG_STRLEN, 128 KiB), no NUL, no alias containing itself. The walk
is iterative: depth is checked, never hit as a RecursionError."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from ncucampaign.errors import CampaignError, Problem

KeyPath = tuple[str | int, ...]
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 40
MAX_VALUES = 200_000
MAX_STRING = 128 * 1024
# libyaml's parser when PyYAML has it (10x faster on big campaigns); the same marks and results.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str, file: str) -> tuple[Any, dict[KeyPath, int], list[Problem]]:
    """The data, the line of each key path, and the duplicate keys (the later value is kept, so that
    the rest of the file is still checked in the same pass); a CampaignError for what stops reading."""
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise CampaignError(file, [yaml_problem(exc, text)]) from None
    except RecursionError:
        raise CampaignError(file, [Problem((), f"nested deeper than {MAX_DEPTH} levels")]) from None
    if node is None:
        return None, {}, []
    lines: dict[KeyPath, int] = {}
    duplicates: list[Problem] = []
    problems = index_lines(node, lines, duplicates)
    if problems:
        raise CampaignError(file, problems + duplicates)
    try:  # construct from the checked node: the text is parsed once (a safe constructor either way)
        loader = _LOADER("")
        try:
            data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:  # e.g. a tag that composes but does not construct
        raise CampaignError(file, [yaml_problem(exc, text)]) from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4300 digits
        raise CampaignError(file, [Problem((), f"a value YAML cannot read: {exc}")]) from None
    return data, lines, duplicates


def yaml_problem(exc: yaml.YAMLError, text: str) -> Problem:
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    position = getattr(exc, "position", None)  # a ReaderError knows only the character offset
    if line is None and isinstance(position, int):
        line = text.count("\n", 0, max(position, 0)) + 1
    what = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc)
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None:
        context = f"{context} on line {context_mark.line + 1}"
    message = f"invalid YAML: {what}" + (f" ({context})" if context else "")
    if mark is not None and 0 <= mark.index < len(text) and text[mark.index] == "\t":
        message += "; YAML does not allow tabs for indentation: indent with spaces"
    return Problem((), message, line)


def index_lines(root: yaml.Node, lines: dict[KeyPath, int], duplicates: list[Problem]) -> list[Problem]:
    """Fill `lines` and `duplicates` (keys given twice); return the problems that stop reading (the bounds above)."""
    problems: list[Problem] = []
    values = 0
    # (node, path, ids of the nodes above it: an alias that leads back to one of them is a cycle)
    stack: list[tuple[yaml.Node, KeyPath, frozenset[int]]] = [(root, (), frozenset())]
    while stack:
        node, path, above = stack.pop()
        values += 1
        lines.setdefault(path, node.start_mark.line + 1)
        line = node.start_mark.line + 1
        if values > MAX_VALUES:
            return [Problem((), f"the file holds more than {MAX_VALUES} values once its YAML aliases are expanded")]
        if len(path) > MAX_DEPTH:
            return [Problem(path[:3], f"nested deeper than {MAX_DEPTH} levels", line)]
        if id(node) in above:
            return [Problem(path, "a YAML alias that contains itself", line)]
        inner = above | {id(node)}
        if isinstance(node, yaml.ScalarNode):
            problems.extend(_scalar_problems(node, path))
        elif isinstance(node, yaml.MappingNode):
            stack.extend(reversed(_mapping_children(node, path, inner, lines, duplicates)))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed([(item, (*path, i), inner) for i, item in enumerate(node.value)]))
    return problems


def _mapping_children(
    node: yaml.MappingNode, path: KeyPath, inner: frozenset[int], lines: dict[KeyPath, int], problems: list[Problem]
) -> list[tuple[yaml.Node, KeyPath, frozenset[int]]]:
    seen: dict[str, int] = {}
    children = []
    for key_node, value_node in node.value:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else f"<{key_node.tag}>"
        line = key_node.start_mark.line + 1
        if key in seen:
            problems.append(Problem((*path, key), f"duplicate key (first given on line {seen[key]})", line))
            continue
        seen[key] = line
        lines.setdefault((*path, key), line)
        children.append((value_node, (*path, key), inner))
    return children


def _scalar_problems(node: yaml.ScalarNode, path: KeyPath) -> list[Problem]:
    value, line = node.value, node.start_mark.line + 1
    if "\x00" in value:
        return [Problem(path, "contains a NUL character (\\0), which no program can be given", line)]
    if len(value) > MAX_STRING:
        return [Problem(path, f"a value of {len(value)} characters; the limit is {MAX_STRING}", line)]
    return []


def line_for(lines: Mapping[KeyPath, int], path: KeyPath) -> int | None:
    """The line of the longest prefix of `path` that the file contains."""
    for end in range(len(path), -1, -1):
        line = lines.get(tuple(path[:end]))
        if line is not None:
            return line
    return None
