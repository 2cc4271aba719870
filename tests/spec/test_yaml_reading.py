"""spec/yaml_lines.py builds a campaign's data in the same pass that checks it: the data must be what PyYAML's own
constructor builds, for every shape YAML allows, and what only PyYAML builds must still come out right."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ncucampaign.errors import CampaignError
from ncucampaign.spec.yaml_lines import parse_yaml

REPO = Path(__file__).resolve().parents[2]

SHAPES = {
    "scalars": "a: 1\nb: 1.5\nc: true\nd: null\ne: ~\nf: '1'\ng: 2024-01-02\nh: 0x1f\ni: !!str 12\nj: .inf\n",
    "keys that are not text": "1: one\ntrue: yes\n2024-01-02: day\nnull: nothing\n",
    "anchors and aliases": "base: &b {x: [1, 2, {y: z}]}\none: *b\ntwo: [*b, *b]\n",
    "a later duplicate wins in place": "a: 1\nb: {c: 1}\na: [2, 3]\nb: {d: 4}\nz: 0\n",
    "merge keys": "base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n",
    "sets and ordered maps": "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\np: !!pairs [{a: 1}]\n",
    "a key that is a list": "? [a, b]\n: c\n",
    "binary and empty": "b: !!binary aGVsbG8=\ne: []\nm: {}\nl: [[], [[]]]\n",
    "a top-level list": "- 1\n- [a, {b: c}]\n",
    "a top-level scalar": "just text\n",
}


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_the_data_is_what_pyyaml_builds(text: str) -> None:
    try:
        expected = yaml.load(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        with pytest.raises(CampaignError):
            parse_yaml(text, "f.yaml")
        return
    data, _, _ = parse_yaml(text, "f.yaml")
    assert data == expected
    assert type(data) is type(expected)


def test_every_committed_campaign_reads_as_pyyaml_reads_it() -> None:
    files = sorted(REPO.glob("campaigns/**/*.yaml")) + sorted(REPO.glob("tests/**/*.yaml"))
    assert len(files) > 10
    for file in files:
        text = file.read_text()
        try:
            expected = yaml.load(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            continue
        try:
            data, _, _ = parse_yaml(text, str(file))
        except CampaignError:  # a test's hostile file: refused by our bounds, not by PyYAML
            continue
        assert data == expected, file


def test_lines_and_duplicates_are_found_in_the_same_pass() -> None:
    text = "a: 1\nb:\n  - x\n  - {c: 2}\na: 3\n"
    data, lines, duplicates = parse_yaml(text, "f.yaml")
    assert data == {"a": 3, "b": ["x", {"c": 2}]}
    assert lines[("b", 1, "c")] == 4
    assert lines[("a",)] == 1
    assert [(d.path, d.line) for d in duplicates] == [(("a",), 5)]


def test_a_tag_pyyaml_cannot_build_is_one_clear_problem() -> None:
    with pytest.raises(CampaignError) as caught:
        parse_yaml("a: !python/object:os.system x\n", "f.yaml")
    assert "invalid YAML" in caught.value.problems[0].message
