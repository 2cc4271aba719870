"""A campaign's keys and the options' fields that hold them (`set` is held by `section_set`)."""

from __future__ import annotations

from typing import Any

from ncucampaign.spec.model import TargetOptions

# The campaign key of every option (`set` is the one whose field has another name: section_set).
_FIELD_OF_KEY: dict[str, str] = {(info.alias or name): name for name, info in TargetOptions.model_fields.items()}
OPTION_KEYS: tuple[str, ...] = tuple(_FIELD_OF_KEY)


def field_name(key: str) -> str:
    """The TargetOptions field that holds a campaign key ('set' -> 'section_set')."""
    return _FIELD_OF_KEY.get(key, key)


def option_value(options: TargetOptions, key: str) -> Any:
    """The value of a campaign key in `options` (None when not set)."""
    return getattr(options, _FIELD_OF_KEY.get(key, key))


def keys_set(options: TargetOptions) -> set[str]:
    """The campaign keys that `options` sets explicitly."""
    fields = TargetOptions.model_fields
    return {(fields[name].alias or name) for name in options.model_fields_set if name in fields}
