"""Read a campaign file: YAML with line numbers -> validated `Campaign`, or a `CampaignError`.

Every problem names the file, the line, the key path and what is wrong, with a "did you mean"
suggestion for unknown keys. Pure apart from reading the file.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ncucampaign.errors import CampaignError, Problem, UsageError
from ncucampaign.spec.model import NAME_PATTERN, Application, Campaign, Target, TargetOptions
from ncucampaign.spec.yaml_lines import MAX_FILE_BYTES, KeyPath, line_for, parse_yaml


@dataclass(frozen=True)
class LoadedCampaign:
    """A validated campaign with what is needed to locate later problems in its file."""

    path: Path
    text: str
    sha256: str
    campaign: Campaign
    name: str
    lines: Mapping[KeyPath, int] = field(repr=False)

    @property
    def base_dir(self) -> Path:
        """Relative paths inside the campaign are relative to the file's directory."""
        return self.path.parent

    def line_of(self, path: KeyPath) -> int | None:
        return line_for(self.lines, path)

    def error(self, problems: list[Problem]) -> CampaignError:
        located = [p if p.line else Problem(p.path, p.message, self.line_of(p.path)) for p in problems]
        return CampaignError(str(self.path), located)


def load_campaign(path: str | Path) -> LoadedCampaign:
    file = Path(path)
    try:
        with open(file, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"{file}: no such campaign file") from None
    except OSError as exc:
        raise UsageError(f"{file}: cannot read: {exc.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise CampaignError(str(file), [Problem((), f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        problem = Problem((), f"not UTF-8 text ({exc.reason} at byte {exc.start})", line)
        raise CampaignError(str(file), [problem]) from None
    return parse_campaign(text, file, hashlib.sha256(raw).hexdigest())


def parse_campaign(text: str, file: Path, sha256: str = "") -> LoadedCampaign:
    data, lines = parse_yaml(text, str(file))
    if data is None:
        raise CampaignError(str(file), [Problem((), "the file is empty; a campaign needs application and targets")])
    if not isinstance(data, dict):
        raise CampaignError(str(file), [Problem((), "the top level must be a mapping (key: value)", 1)])
    try:
        campaign = Campaign.model_validate(data)
    except ValidationError as exc:
        raise CampaignError(str(file), _problems_from_pydantic(exc, data, lines)) from None
    name = campaign.name or _name_from_file(file)
    if not re.match(NAME_PATTERN, name):
        raise CampaignError(
            str(file),
            [Problem(("name",), f"the file name {file.stem!r} is not usable as a campaign name; set 'name:'", 1)],
        )
    return LoadedCampaign(file, text, sha256, campaign, name, lines)


def _name_from_file(file: Path) -> str:
    return file.stem


# --- pydantic errors -> problems ----------------------------------------------------------------------


def _problems_from_pydantic(exc: ValidationError, data: dict[str, Any], lines: dict[KeyPath, int]) -> list[Problem]:
    merged: dict[KeyPath, list[str]] = {}
    for error in exc.errors(include_url=False):
        path = _data_path(data, tuple(error["loc"]), error["type"])
        if error["type"] == "too_short" and path == ("targets",) and data.get("targets"):
            continue  # pydantic's echo of failed items, not an empty list
        message = _message(error, path)
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


def _message(error: Mapping[str, Any], path: KeyPath) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        key = str(path[-1]) if path else "?"
        allowed = _allowed_keys(path[:-1])
        hint = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        suggestion = f"; did you mean '{hint[0]}'?" if hint else f" (allowed: {', '.join(sorted(allowed))})"
        return f"unknown key '{key}'{suggestion}"
    if kind == "missing":
        return "required key is missing"
    if kind == "too_short" and path and path[-1] == "targets":
        return "the target list is empty; add at least one target"
    if kind in ("tuple_type", "string_type") and path and path[-1] == "command":
        return "expected a list of strings (argv) or one command string"
    message = str(error["msg"])
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    if kind == "string_pattern_mismatch" and path and path[-1] == "name":
        message = "a name may hold letters, digits, '_', '-' and '.', must not start with '.' or '-', max 100"
    if kind == "string_pattern_mismatch" and path and path[-1] == "range_filter":
        message = "use ncu's form [yes|no]:<start/stop instances>:<NVTX instances>, e.g. '::8' or '::(4|8)'"
    return message


def _allowed_keys(parent: KeyPath) -> list[str]:
    model: type[BaseModel] = Campaign
    if parent[:1] == ("application",):
        model = Application
    elif parent[:1] == ("defaults",):
        model = TargetOptions
    elif parent[:1] == ("targets",) and len(parent) >= 2:
        model = Target
    return [info.alias or name for name, info in model.model_fields.items()]
