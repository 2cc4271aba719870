"""No committed fixture leans on a folder of the machine that made it (issue 78). A run directory made in
/tmp/oldrun/work resumed only where /tmp/oldrun/work had been left behind: CI on a new machine failed. Every data
file under tests/ and campaigns/ (every member of an archive too) that names an absolute path of a machine
(/tmp/..., /root/..., /home/...) is either listed below with why it is there, or an archive member that
tests/run_archives.py rewrites to the test's folder when it unpacks it."""

from __future__ import annotations

import fnmatch
import gzip
import re
import subprocess
import tarfile
from collections.abc import Iterator

import pytest

from tests.conftest import ROOT
from tests.run_archives import ORIGINS, is_text

MACHINE_PATH = re.compile(rb"(?<![\w.~/-])/(?:tmp|root|home)/[^\s\"'\x00(),;]*")

CODE = (".py", ".sh", ".bash", ".c", ".cu")  # code may name /tmp (a default, an example): this is about data

# glob -> why its absolute paths are there on purpose (and never opened by a test).
ON_PURPOSE = {
    "tests/fixtures/logs/*.log": "real ncu 2025.3.1 and nsys console logs from the GPU machine, kept byte for byte: "
    "ncu prints the report it wrote and the process it attached to; parsers read them as text",
    "tests/fixtures/cases.tsv": "the command lines those real logs came from, as they were run on the GPU machine",
    "tests/fixtures/csv/*_session.csv": "real `ncu --import --page session` output: the report's path on the GPU "
    "machine is one of its cells",
    "tests/fixtures/zoo/*/*.log": "real ncu logs of a zoo run on the GPU machine, kept byte for byte",
    "tests/fixtures/reports/*.ncu-rep": "NVIDIA's report bytes as ncu wrote them on the GPU machine: they hold the "
    "application's command line and the report's path",
    "tests/fixtures/damaged/*.ncu-rep": "a real report cut short: NVIDIA's bytes, paths and all",
    "tests/fixtures/older_run/*.tar.gz::*.ncu-rep": "copies of the real reports above, inside an older run",
    "tests/fixtures/history_real_runs/*.json.gz": "manifests of real runs on the GPU machine: history reads their "
    "values, never the campaign file they name",
    "tests/gpu/zoo/*/discover.txt": "`discover` transcripts from the GPU machine: what it printed, run directory "
    "included",
    "tests/gpu/collective_replay.yaml": "a comment: the command line that runs it, with an --out of the user's",
}


def _data_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "tests", "campaigns"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return sorted(name for name in listed.split("\0") if name and not name.endswith(CODE) and _not_a_script(name))


def _not_a_script(name: str) -> bool:
    with open(ROOT / name, "rb") as handle:
        return handle.read(2) != b"#!"  # the fake ncu, nsys and their helpers are programs


def _contents(name: str) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of the file, or of each member of an archive (`archive::member`)."""
    path = ROOT / name
    if name.endswith((".tar.gz", ".tgz", ".tar")):
        with tarfile.open(path) as archive:
            for member in archive.getmembers():
                extracted = archive.extractfile(member) if member.isfile() else None
                if extracted is not None:
                    yield f"{name}::{member.name}", extracted.read()
    elif name.endswith(".gz"):
        yield name, gzip.decompress(path.read_bytes())
    else:
        yield name, path.read_bytes()


def _reason(name: str) -> str | None:
    for pattern, reason in ON_PURPOSE.items():
        if "::" in pattern and "::" in name:
            archive, member = pattern.split("::")
            if fnmatch.fnmatch(name.split("::")[0], archive) and fnmatch.fnmatch(name.split("::")[1], member):
                return reason
        elif fnmatch.fnmatch(name, pattern):
            return reason
    return None


def _rewritten_on_unpacking(name: str, text: bool, paths: set[bytes]) -> bool:
    """An archive member tests/run_archives.py rewrites: text, and each path under one of the archive's origins."""
    if "::" not in name or not text:
        return False
    archive = name.split("::")[0].rsplit("/", 1)[-1]
    origins = [origin.encode() for origin in ORIGINS.get(archive, ("", {}))[1]]
    return bool(origins) and all(any(path.startswith(origin) for origin in origins) for path in paths)


Found = dict[str, tuple[set[bytes], bool]]  # file or member -> the machine paths it names, and whether it is text


@pytest.fixture(scope="module")
def machine_paths() -> Found:
    found: Found = {}
    for name in _data_files():
        for part, data in _contents(name):
            paths = set(MACHINE_PATH.findall(data))
            if paths:
                found[part] = (paths, is_text(data))
    return found


def test_no_fixture_names_a_path_of_the_machine_that_made_it_unless_on_purpose(machine_paths: Found) -> None:
    unexplained = {
        name: sorted(paths)[:3]
        for name, (paths, text) in machine_paths.items()
        if _reason(name) is None and not _rewritten_on_unpacking(name, text, paths)
    }
    assert not unexplained, (
        "committed fixtures name absolute paths of the machine that made them: make them relative, rewrite them "
        f"where the test unpacks them (tests/run_archives.py), or list them in ON_PURPOSE with why: {unexplained}"
    )


def test_every_reason_on_purpose_still_holds_such_a_path(machine_paths: Found) -> None:
    """A listed glob that matches no such file any more is a hole for the next fixture: it is taken out."""
    stale = [
        pattern for pattern in ON_PURPOSE if not any(_reason(name) == ON_PURPOSE[pattern] for name in machine_paths)
    ]
    assert not stale, f"ON_PURPOSE lists globs no fixture with a machine's path matches: {stale}"


def test_the_check_sees_a_machine_path_in_a_fixture_and_in_an_archive_member() -> None:
    """The pattern finds what it is for, and leaves a relative path and a URL's path alone."""
    assert MACHINE_PATH.findall(b'"source": "/tmp/oldrun/work/camp.yaml"') == [b"/tmp/oldrun/work/camp.yaml"]
    assert MACHINE_PATH.findall(b"(/root/.pyenv/versions/3.11.7/bin/python3)") == [
        b"/root/.pyenv/versions/3.11.7/bin/python3"
    ]
    assert MACHINE_PATH.findall(b"runs/tmp/x https://example.org/home/x ./tmp/y") == []
    assert _rewritten_on_unpacking(
        "tests/fixtures/older_run/older-311a033.tar.gz::m.json", True, {b"/tmp/oldrun/work/x"}
    )
    assert not _rewritten_on_unpacking(
        "tests/fixtures/older_run/older-311a033.tar.gz::m.json", True, {b"/tmp/elsewhere/x"}
    )
