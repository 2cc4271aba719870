"""Committed run directories (tests/fixtures/older_run/*.tar.gz), unpacked as if they had been made in the
test's own folder. Each was made by an older ncucampaign in a folder of the machine that made it, and its
manifest, plan, logs and scripts name that folder: a resume reads the campaign's folder from the manifest, so a
copy unpacked as it is resumed only where that machine's folder happened to be left behind (issue 78). Every
absolute path an archive's text files name starts with one of its ORIGINS, rewritten here to the test's folder
(tests/test_fixture_paths.py holds every archive to that); the reports are NVIDIA's bytes and are kept as they are."""

from __future__ import annotations

import sys
import tarfile
from pathlib import Path

from tests.conftest import FAKE_NCU_DIR

SAFE = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}  # Python 3.11.4 and later: no links out

# Per archive: the folder of the campaign's folder it unpacks into (its runs_dir), and the absolute paths of the
# machine that made it with what each stands for here (`{work}`: the campaign's folder in the test). The longest
# origin is rewritten first.
ORIGINS: dict[str, tuple[str, dict[str, str]]] = {
    # 311a033's run of tests/fixtures/older_run/camp.yaml from /tmp/oldrun/work, its runs under runs/, on the fake
    # ncu of a checkout at /tmp/old, the application started by that machine's Python.
    "older-311a033.tar.gz": (
        "runs",
        {
            "/tmp/oldrun/work": "{work}",
            "/tmp/old/tests/fake_ncu/ncu": str(FAKE_NCU_DIR / "ncu"),
            "/root/.pyenv/versions/3.11.7/bin/python3": sys.executable,
        },
    ),
    # bfa33a2's `run --slurm` from /tmp/fixgen, its scripts starting that machine's Python.
    "slurm-bfa33a2.tar.gz": (
        ".",
        {
            "/tmp/fixgen": "{work}",
            "/root/.pyenv/versions/3.11.7/bin/python3": sys.executable,
        },
    ),
}


def is_text(data: bytes) -> bool:
    """A manifest, journal, plan, log or script (a report is binary: NUL bytes, not UTF-8)."""
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def rewritten(text: str, origins: dict[str, str], work: Path) -> str:
    for origin in sorted(origins, key=len, reverse=True):
        text = text.replace(origin, origins[origin].format(work=work))
    return text


def unpack_run(archive: Path, work: Path) -> Path:
    """`archive` unpacked as if its campaign had run from the folder `work`, the paths of the machine that made it
    rewritten to this one's; the folder it unpacked into."""
    under, origins = ORIGINS[archive.name]
    into = work / under
    with tarfile.open(archive) as opened:
        members = [member.name for member in opened.getmembers() if member.isfile()]
        opened.extractall(into, **SAFE)
    for name in members:
        path = into / name
        data = path.read_bytes()
        if is_text(data):
            text = data.decode("utf-8")
            changed = rewritten(text, origins, work)
            if changed != text:
                path.write_text(changed, encoding="utf-8")
    return into
