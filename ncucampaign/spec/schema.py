"""JSON Schemas generated from the pydantic models (the files in schemas/ are these, committed)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from ncucampaign.spec.model import Campaign

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def json_schema(model: type[BaseModel], file_name: str, title: str) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True)
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": f"https://ncucampaign.invalid/schemas/{file_name}",
        **schema,
        "title": title,
    }


def campaign_schema() -> dict[str, Any]:
    return json_schema(Campaign, "campaign.schema.json", "ncucampaign campaign file")


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
