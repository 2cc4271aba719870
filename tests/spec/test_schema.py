"""The JSON Schemas in schemas/ are generated from the pydantic models and must not drift; every
example campaign is valid both for pydantic and for the schema editors use."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from ncucampaign.execute.rundir.manifest import manifest_schema
from ncucampaign.plan.expand import build_plan
from ncucampaign.spec.loader import load_campaign
from ncucampaign.spec.schema import campaign_schema, render

ROOT = Path(__file__).resolve().parents[2]
CAMPAIGNS = sorted((ROOT / "campaigns").glob("*.yaml"))
ZOO = sorted((ROOT / "tests" / "gpu" / "zoo").glob("*/campaign.yaml"))


@pytest.mark.parametrize(("file", "generate"), [("campaign", campaign_schema), ("manifest", manifest_schema)])
def test_committed_schema_is_fresh(file: str, generate) -> None:
    committed = (ROOT / "schemas" / f"{file}.schema.json").read_text()
    option = " --manifest" if file == "manifest" else ""
    assert committed == render(generate()), (
        f"schemas/{file}.schema.json is stale: run `ncucampaign schema{option} > schemas/{file}.schema.json`"
    )


def test_there_are_example_campaigns() -> None:
    assert {p.name for p in CAMPAIGNS} >= {"decode.yaml", "manual.yaml"}


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
@pytest.mark.parametrize("campaign", CAMPAIGNS + ZOO, ids=lambda p: str(p.relative_to(ROOT)))
def test_example_campaign_is_valid(campaign: Path) -> None:
    schema = json.loads((ROOT / "schemas" / "campaign.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(yaml.safe_load(campaign.read_text()), schema)
    assert build_plan(load_campaign(campaign)).invocations
    relative = Path("../" * (len(campaign.relative_to(ROOT).parts) - 1)) / "schemas" / "campaign.schema.json"
    assert campaign.read_text().startswith(f"# yaml-language-server: $schema={relative}")


def test_schema_rejects_what_pydantic_rejects() -> None:
    schema = json.loads((ROOT / "schemas" / "campaign.schema.json").read_text())
    bad = {"application": {"command": "x"}, "targets": [{"name": "a", "lunch_count": 1}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
