"""Rewrite tests/golden/ from the current code (only for a deliberate change of planned commands)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.conftest import ROOT
from tests.plan.test_golden_plans import CAMPAIGNS, GOLDEN, planned

if __name__ == "__main__":
    for campaign in CAMPAIGNS:
        (GOLDEN / f"plan-{campaign.stem}.json").write_text(planned(campaign, "--format", "json"))
        (GOLDEN / f"plan-{campaign.stem}.txt").write_text(planned(campaign))
        print(f"wrote {GOLDEN.relative_to(ROOT)}/plan-{campaign.stem}.{{json,txt}}")
