"""JSON Schemas generated from the pydantic models (the files in schemas/ are these, committed)."""

from __future__ import annotations

import json
from typing import Any

from ncucampaign.manifest import Manifest
from ncucampaign.model import Campaign

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def campaign_schema() -> dict[str, Any]:
    schema = Campaign.model_json_schema(by_alias=True)
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": "https://ncucampaign.invalid/schemas/campaign.schema.json",
        **schema,
        "title": "ncucampaign campaign file",
    }


def manifest_schema() -> dict[str, Any]:
    schema = Manifest.model_json_schema(by_alias=True)
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": "https://ncucampaign.invalid/schemas/manifest.schema.json",
        **schema,
        "title": "ncucampaign run manifest",
    }


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
