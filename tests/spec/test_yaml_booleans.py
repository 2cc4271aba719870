"""YAML reads a bare off, no or yes as a boolean: where a key takes words, the problem says to quote it, with
the key's own values, and the README quotes them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import (
    BARE_APP,
    campaign_problems,
    campaign_text,
    cli_in,
    docs_text,
)


@pytest.mark.slow  # runs the CLI end to end
def test_a_bare_off_read_as_false_says_to_quote_it(tmp_path: Path) -> None:
    done = cli_in(tmp_path, "validate", "camp.yaml", text=campaign_text("- name: t\n  share: off\n"))
    assert done.returncode == 2
    assert "targets[0].share: must be 'auto' or 'off' (YAML read a bare word as false: quote it" in done.stderr


@pytest.mark.slow  # runs the CLI end to end
def test_the_readme_quotes_off_wherever_a_campaign_key_takes_it() -> None:
    readme = docs_text()
    for line in re.findall(r"`([a-z_]+: off)`", readme):
        assert yaml.safe_load(line) != {line.split(":")[0]: "off"}, f"README writes `{line}`: YAML reads it as false"
    assert "`share: 'off'`" in readme


@pytest.mark.parametrize(
    ("value", "said"),
    [("cache_control: false", "e.g. 'none'"), ("share: off", "e.g. 'off'"), ("clock_control: false", "e.g. 'none'")],
)
def test_a_bare_word_yaml_read_as_false_is_hinted_with_the_keys_own_values(value: str, said: str) -> None:
    (only,) = campaign_problems(BARE_APP + f"defaults:\n  {value}\ntargets:\n  - name: a\n")
    assert said in only, only
