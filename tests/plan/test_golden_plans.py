"""`plan` prints exactly what it printed before the package was reorganised by stage.

The files in tests/golden/ were written by the flat-layout code (commit 868ebcb) with the checkout
path replaced by <ROOT>, and the stage layout reproduced them byte for byte. A change that alters a
planned ncu command fails here; a deliberate change regenerates them with
`python tests/golden/regenerate.py` and says so in its commit. Since then, `plan`'s
default -o folder follows the one output rule (<runs root>/<campaign>/plan/reports); nothing else
in the commands changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPORT, ROOT, fake_env, run_cli_here

GOLDEN = ROOT / "tests" / "golden"
CAMPAIGNS = sorted((ROOT / "campaigns").glob("*.yaml"))


def planned(campaign: Path, *options: str) -> str:
    done = run_cli_here("plan", f"campaigns/{campaign.name}", *options, cwd=ROOT, env=fake_env())
    assert done.returncode == 0, done.stderr
    return done.stdout.replace(str(ROOT), "<ROOT>")


@pytest.mark.parametrize("campaign", CAMPAIGNS, ids=lambda p: p.stem)
@pytest.mark.parametrize("form", ["json", "txt"])
def test_plan_output_is_unchanged(campaign: Path, form: str) -> None:
    options = ("--format", "json") if form == "json" else ()
    expected = (GOLDEN / f"plan-{campaign.stem}.{form}").read_text().replace(".ncu-rep", REPORT)
    assert planned(campaign, *options) == expected
