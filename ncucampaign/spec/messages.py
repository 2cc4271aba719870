"""pydantic's validation errors -> problems in the words of a campaign file: the key path as the
file spells it, its line, and a message that says what to write (never pydantic's own wording)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from ncucampaign.errors import Problem, control_characters, printable
from ncucampaign.spec.kubernetes import KubernetesSection, KubernetesVolume, Toleration
from ncucampaign.spec.model import Application, Campaign, Target, TargetOptions
from ncucampaign.spec.values import PATH_PATTERN
from ncucampaign.spec.yaml_lines import KeyPath, line_for


def problems_from_pydantic(exc: ValidationError, data: dict[str, Any], lines: dict[KeyPath, int]) -> list[Problem]:
    merged: dict[KeyPath, list[str]] = {}
    for error in exc.errors(include_url=False):
        path = _data_path(data, tuple(error["loc"]), error["type"])
        if error["type"] == "too_short" and path == ("targets",) and data.get("targets"):
            continue  # pydantic's echo of failed items, not an empty list
        message = message_for(error, path)
        messages = merged.setdefault(path, [])
        if message not in messages:
            messages.append(message)
    return [
        Problem(path, "; or ".join(messages), line_for(lines, path))
        for path, messages in sorted(merged.items(), key=lambda item: line_for(lines, item[0]) or 0)
    ]


def _data_path(data: Any, loc: KeyPath, error_type: str) -> KeyPath:
    """Keep the parts of pydantic's location that are keys of the data (drop union-member tags)."""
    kept: list[str | int] = []
    current = data
    for position, part in enumerate(loc):
        in_dict = isinstance(current, dict) and part in current
        in_list = isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current)
        if in_dict or in_list:
            kept.append(part)
            current = current[part]
        elif position == len(loc) - 1 and error_type == "missing":
            kept.append(part)
    return tuple(kept)


# pydantic's error types -> what to write instead, in the file's terms.
_PLAIN: dict[str, str] = {
    "int_type": "expected a whole number",
    "int_parsing": "expected a whole number",
    "int_from_float": "expected a whole number",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "string_type": "expected text",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
    "dict_type": "expected a mapping (key: value)",
    "model_type": "expected a mapping (key: value)",
    "model_attributes_type": "expected a mapping (key: value)",
    "string_too_short": "must not be empty",
    "too_short": "must not be empty",
    "finite_number": "expected a finite number",
}
_PATTERNS: dict[str, str] = {
    "name": "a name may hold letters, digits, '_', '-' and '.', must not start with '.' or '-', max 100",
    "range_filter": "use ncu's form [yes|no]:<start/stop instances>:<NVTX instances>, e.g. '::8' or '::(4|8)'",
    # the kubernetes: section (spec/kubernetes.py): Kubernetes' own name rules
    "namespace": "a Kubernetes name: lower-case letters, digits and '-', at most 63, e.g. 'profiling'",
    "claim": "a Kubernetes name: lower-case letters, digits, '-' and '.', e.g. 'ncucampaign-runs'",
    "service_account": "a Kubernetes name: lower-case letters, digits, '-' and '.', e.g. 'profiler'",
    "path": "an absolute path, as the volume is mounted: e.g. '/runs'",
    "queue": "a label value: letters, digits, '-', '_' and '.', at most 63, e.g. 'gpu-queue'",
    "image": "an image reference: printable characters, no blank, e.g. 'registry.example.com/ncucampaign:1.0'",
    "python": "a command in the image, no blank: e.g. 'python3' or '/opt/venv/bin/python'",
}
_LABEL_KEY = (
    "a Kubernetes label key: an optional DNS prefix and '/', then letters, digits, '-', '_' and '.', at most 63, "
    "e.g. 'nvidia.com/gpu.product'"
)
_LABEL_VALUE = "a Kubernetes label value: letters, digits, '-', '_' and '.', at most 63, e.g. 'NVIDIA-H200'"


def _kubernetes_rule(path: KeyPath, loc: tuple[Any, ...]) -> str | None:
    """Label keys and values of the kubernetes: section (node_selector's, a toleration's) in
    Kubernetes' words; pydantic's location ends in '[key]' when a mapping's key is wrong."""
    if path[:1] != ("kubernetes",) or len(path) < 3:
        return None
    if path[1] == "node_selector":
        return _LABEL_KEY if loc[-1:] == ("[key]",) else _LABEL_VALUE
    if path[1] == "tolerations":
        return {"key": _LABEL_KEY, "value": _LABEL_VALUE}.get(str(path[-1]))
    return None


def message_for(error: Mapping[str, Any], path: KeyPath) -> str:
    """One pydantic error (of the value at `path`) in the words of a campaign file."""
    kind, context = error["type"], error.get("ctx") or {}
    last = str(path[-1]) if path else ""
    if kind == "extra_forbidden":
        return _unknown_key(path)
    if kind == "missing":
        return "required key is missing"
    if kind == "too_short" and last == "targets":
        return "the target list is empty; add at least one target"
    if kind in ("tuple_type", "string_type", "list_type") and last == "command":
        return "expected a list of strings (argv) or one command string"
    if kind == "literal_error":
        message = f"must be {context.get('expected', 'one of the documented values')}"
        if isinstance(error.get("input"), bool):  # share: off, clock_control: none is fine, but off/no/yes are not
            allowed = re.findall(r"'([^']*)'", str(context.get("expected", "")))
            falsy = [word for word in ("off", "none", "no") if word in allowed]
            example = (falsy if error["input"] is False and falsy else allowed or ["off"])[0]
            message += f" (YAML read a bare word as {str(error['input']).lower()}: quote it, e.g. '{example}')"
        return message
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = {"greater_than_equal": "at least", "greater_than": "more than", "less_than_equal": "at most"}
        value = context.get("ge", context.get("gt", context.get("le", context.get("lt"))))
        return f"must be {bound.get(kind, 'less than')} {value}"
    if kind == "string_pattern_mismatch" and context.get("pattern") == PATH_PATTERN:
        shown = [printable(char) for char in control_characters(str(error.get("input", "")))]
        return (
            f"a path cannot hold control characters ({', '.join(shown)}): a newline would end the line of every "
            "script and hint that names it"
        )
    if kind == "string_pattern_mismatch":
        rule = _kubernetes_rule(path, tuple(error.get("loc", ()))) or _PATTERNS.get(last)
        return rule or "is not of the expected form; see the schema (ncucampaign schema)"
    if kind in _PLAIN:
        message = _PLAIN[kind]
        read = error.get("input")
        if isinstance(read, bool | float) and kind.startswith("int"):
            message += f", not {str(read).lower()}"
        elif isinstance(read, bool) and kind != "bool_type":
            message += " (YAML read this as a boolean: quote it)"
        elif isinstance(read, str) and kind.startswith("int"):
            message += f", not the text {read!r} (write it without quotes)"
        return message
    message = str(error["msg"])
    return message.removeprefix("Value error, ")


def _unknown_key(path: KeyPath) -> str:
    key = str(path[-1]) if path else "?"
    allowed = _allowed_keys(path[:-1])
    hint = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    suggestion = f"; did you mean '{hint[0]}'?" if hint else f" (allowed: {', '.join(sorted(allowed))})"
    return f"unknown key '{key}'{suggestion}"


def _allowed_keys(parent: KeyPath) -> list[str]:
    model: type[BaseModel] = Campaign
    if parent[:1] == ("application",):
        model = Application
    elif parent[:1] == ("defaults",):
        model = TargetOptions
    elif parent[:1] == ("targets",) and len(parent) >= 2:
        model = Target
    elif parent[:1] == ("kubernetes",):
        nested: dict[str, type[BaseModel]] = {"volume": KubernetesVolume, "tolerations": Toleration}
        model = nested.get(str(parent[1]), KubernetesSection) if len(parent) >= 2 else KubernetesSection
    return [info.alias or name for name, info in model.model_fields.items()]
