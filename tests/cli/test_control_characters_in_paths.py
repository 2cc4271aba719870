"""No path a campaign or a flag gives may hold a control character: `runs_dir: "/x\ntouch /tmp/PWNED #"` once
validated ok and `plan --slurm` wrote its second line as a command of the batch script (round 7, item 1)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import campaign_text, run_cli

CAMPAIGN = campaign_text("- name: a\n  kernel_name: k\n")


@pytest.mark.parametrize(
    ("key", "line"),
    [
        ("runs_dir", 'runs_dir: "/x\\ntouch /tmp/PWNED #"\n'),
        ("ncu", 'ncu: "ncu\\u2028x"\n'),
        ("application.cwd", None),
    ],
)
def test_a_control_character_in_a_campaigns_path_is_refused_by_validate_with_its_key(
    tmp_path: Path, key: str, line: str | None
) -> None:
    text = line + CAMPAIGN if line else CAMPAIGN.replace("application:\n", 'application:\n  cwd: "a\\x1bb"\n', 1)
    (tmp_path / "camp.yaml").write_text(text)
    for command in (("validate",), ("plan", "--slurm")):
        done = run_cli(*command, "camp.yaml", cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"{key}: a path cannot hold control characters" in done.stderr, done.stderr
        assert "touch" not in done.stdout
    assert not (tmp_path / "PWNED").exists() and not Path("/x").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ("plan", "camp.yaml", "--slurm", "--out", "r\ntouch x #"),
        ("plan", "camp.yaml", "--k8s", "--out", "r\tx"),
        ("plan", "camp.yaml", "--ncu", "n\x1b]0;x\x07"),
        ("summarize", "run\nx"),
        ("run", "camp.yaml", "--out", "r\u2029x"),
        ("validate", "camp\x85.yaml"),
    ],
)
def test_a_control_character_in_a_path_flag_is_a_usage_error_that_names_the_flag(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    (tmp_path / "camp.yaml").write_text(CAMPAIGN)
    done = run_cli(*argv, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "a path cannot hold control characters" in done.stderr and "argument" in done.stderr, done.stderr
    assert not any(tmp_path.glob("r*")) and done.stdout == ""


def test_the_schema_says_a_path_holds_no_control_character() -> None:
    schema = json.loads(Path(__file__).parents[2].joinpath("schemas", "campaign.schema.json").read_text())
    (pattern,) = [kind["pattern"] for kind in schema["properties"]["runs_dir"]["anyOf"] if "pattern" in kind]
    assert re.fullmatch(pattern, "runs/a b%A") and not re.fullmatch(pattern, "/x\ntouch")
