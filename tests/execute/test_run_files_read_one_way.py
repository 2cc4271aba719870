"""A run directory's files are read one way (execute/rundir/reading.py): bounded, never through a link, validated
into their model once, and damage said in the same words by every command that meets it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ncucampaign.execute.rundir.journal import entry_of
from ncucampaign.execute.rundir.manifest import Manifest
from ncucampaign.execute.rundir.reading import RunFileDamaged, read_manifest, read_model
from tests.conftest import fake_env, run_cli
from tests.manifests import manifest_with, target_record

PACKAGE = Path(__file__).resolve().parents[2] / "ncucampaign"


def _run_dir(tmp_path: Path) -> Path:
    root = tmp_path / "run"
    root.mkdir()
    (root / "manifest.json").write_text(manifest_with([target_record("t", seconds=1.0)]).model_dump_json())
    return root


def test_a_manifest_reads_as_its_model_with_its_journal(tmp_path: Path) -> None:
    root = _run_dir(tmp_path)
    assert read_manifest(root).targets[0].name == "t"
    manifest = read_manifest(root)
    (root / "manifest.journal").write_text(json.dumps(entry_of(target_record("t", seconds=2.0), manifest)) + "\n")
    assert read_manifest(root).targets[0].seconds == 2.0


def test_a_link_is_never_followed(tmp_path: Path) -> None:
    root = _run_dir(tmp_path)
    (root / "manifest.json").rename(tmp_path / "elsewhere.json")
    (root / "manifest.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(RunFileDamaged, match="a link or not a regular file") as caught:
        read_manifest(root)
    assert not caught.value.opened


def test_damage_is_said_the_same_by_every_reader(tmp_path: Path) -> None:
    root = _run_dir(tmp_path)
    (root / "manifest.json").write_text('{"manifest_version": 1, "targets": [')
    with pytest.raises(RunFileDamaged, match="not JSON") as direct:
        read_manifest(root)
    with pytest.raises(RunFileDamaged, match="not JSON"):
        read_model(root / "manifest.json", Manifest, 1 << 20)
    said = direct.value.why
    for command in (["summarize", str(root)], ["run", "--resume", str(root)]):
        done = run_cli(*command, cwd=tmp_path, env=fake_env())
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, (command, done.stderr)


def test_too_large_a_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    root = _run_dir(tmp_path)
    with pytest.raises(RunFileDamaged, match="more than the 0 MiB its readers take"):
        read_model(root / "manifest.json", Manifest, 100)


def test_only_the_reader_reads_manifest_json() -> None:
    """No other module opens, loads or parses manifest.json: they take the model the reader hands them."""
    readers = [
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if re.search(
            r"MANIFEST\)?\.(read_text|read_bytes|open)\(|manifest\.json.*(json\.load|read_text)", path.read_text()
        )
    ]
    assert readers == [], readers
