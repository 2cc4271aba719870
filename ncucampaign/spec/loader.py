"""Read a campaign file: YAML with line numbers -> validated `Campaign`, or a `CampaignError` whose problems name
the file, line, key path and what is wrong, with "did you mean" for unknown keys. Pure but for reading."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ncucampaign.errors import CampaignError, Problem, UsageError
from ncucampaign.spec.messages import problems_from_pydantic
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
    # Where each of campaign.targets stands in the file; a partial campaign (the valid targets of a
    # file with problems, checked further by the planner) holds fewer targets than the file.
    target_indexes: tuple[int, ...] | None = None

    def index_of(self, position: int) -> int:
        return self.target_indexes[position] if self.target_indexes is not None else position

    def target_at(self, index: int) -> Target:
        """The target at `index` in the file (in a partial campaign too)."""
        position = self._positions[index] if self.target_indexes is not None else index
        return self.campaign.targets[position]

    @functools.cached_property  # asked once per invocation: a search of the indexes made lint n^2 on a partial one
    def _positions(self) -> dict[int, int]:
        return {index: position for position, index in enumerate(self.target_indexes or ())}

    @functools.cached_property  # one Path for every invocation's folders (plan/expand.py caches on it)
    def base_dir(self) -> Path:
        """Relative paths inside the campaign are relative to the file's directory."""
        return self.path.parent

    def line_of(self, path: KeyPath) -> int | None:
        return line_for(self.lines, path)

    def locate(self, problems: list[Problem]) -> list[Problem]:
        """The problems, each with the line of its key path."""
        return [p if p.line else Problem(p.path, p.message, self.line_of(p.path)) for p in problems]

    def error(self, problems: list[Problem]) -> CampaignError:
        return CampaignError(str(self.path), self.locate(problems))


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


OWN_KEYS = "x-"  # top-level keys that are the file's own: YAML anchors live there


def parse_campaign(text: str, file: Path, sha256: str = "") -> LoadedCampaign:
    data, lines, duplicates = parse_yaml(text, str(file))
    if data is None:
        raise CampaignError(str(file), [Problem((), "the file is empty; a campaign needs application and targets")])
    if not isinstance(data, dict):
        raise CampaignError(str(file), [Problem((), "the top level must be a mapping (key: value)", 1)])
    data = {key: value for key, value in data.items() if not str(key).startswith(OWN_KEYS)}  # Campaign's docstring
    given = data.get("name")
    name = given if isinstance(given, str) else file.stem
    naming = [] if re.match(NAME_PATTERN, name) or "name" in data else [_bad_file_name(file)]
    try:
        campaign = Campaign.model_validate(data)
    except ValidationError as exc:
        partial = _partial(data, file, text, sha256, name, lines)
        found = duplicates + problems_from_pydantic(exc, data, lines) + naming + _same_names(data, lines)
        raise CampaignError(str(file), found, partial) from None
    loaded = LoadedCampaign(file, text, sha256, campaign, name, lines)
    if naming or duplicates:  # the whole campaign as the partial one: the planner's problems come too
        raise CampaignError(str(file), duplicates + naming, loaded)
    return loaded


def _bad_file_name(file: Path) -> Problem:
    return Problem(("name",), f"the file name {file.stem!r} is not usable as a campaign name; set 'name:'", 1)


def _same_names(data: dict[str, Any], lines: dict[KeyPath, int]) -> list[Problem]:
    """Targets named alike, found even when some of them are invalid (the planner checks expanded
    names of valid campaigns; its message is the same, so a name is never reported twice)."""
    given = data.get("targets")
    raw = given if isinstance(given, list) else []
    first: dict[str, int] = {}
    problems = []
    for index, target in enumerate(raw):
        name = target.get("name") if isinstance(target, dict) else None
        if not isinstance(name, str) or "{" in name:
            continue
        earlier = first.setdefault(name, index)
        if earlier != index:
            path = ("targets", index, "name")
            message = f"name {name!r} is already used by targets[{earlier}]"
            problems.append(Problem(path, message, line_for(lines, path)))
    return problems


def _valid_option(key: Any, value: Any) -> bool:
    try:
        TargetOptions.model_validate({key: value})
    except ValidationError:
        return False
    return True


def _without_invalid_keys(raw: Any) -> Target | None:
    """A target with the keys that do not validate left out, so that the lint sees the rest in the same
    pass (a section typo's warning waited behind a key error of its target); None when even
    that is no target (no name, not a mapping)."""
    try:
        return Target.model_validate(raw)
    except ValidationError as exc:
        if not isinstance(raw, dict):
            return None
        bad = {error["loc"][0] for error in exc.errors() if error["loc"]}
    try:
        return Target.model_validate({key: value for key, value in raw.items() if key not in bad})
    except ValidationError:
        return None


def _partial(
    data: dict[str, Any], file: Path, text: str, sha256: str, name: str, lines: dict[KeyPath, int]
) -> LoadedCampaign | None:
    """The targets that are valid on their own, so that the planner can report its problems too
    (duplicate names, matrices) in the same pass; None when the application itself is invalid."""
    try:
        application = Application.model_validate(data.get("application"))
    except ValidationError:
        return None
    given_defaults = data.get("defaults")
    raw_defaults = given_defaults if isinstance(given_defaults, dict) else {}
    try:
        defaults = TargetOptions.model_validate(raw_defaults)
    except ValidationError:  # keep the keys that are valid on their own (lint_ignore, say)
        defaults = TargetOptions.model_validate({k: v for k, v in raw_defaults.items() if _valid_option(k, v)})
    given_targets = data.get("targets")
    raw_targets = given_targets if isinstance(given_targets, list) else []
    valid: list[tuple[int, Target]] = []
    for index, raw in enumerate(raw_targets):
        target = _without_invalid_keys(raw)
        if target is not None:
            valid.append((index, target))
    campaign = Campaign.model_construct(application=application, defaults=defaults, targets=tuple(t for _, t in valid))
    return LoadedCampaign(file, text, sha256, campaign, name, lines, tuple(i for i, _ in valid))
