"""The package as users install it (issue 82, part 3): `python -m build` makes an sdist and a wheel that
`twine check` accepts; the wheel carries every file the package reads at run time; installed into a fresh virtual
environment, with no checkout on sys.path, it runs --version, schema, validate and plan on an example campaign the
sdist ships. Built from a copy of the tracked files: setuptools writes build/ and *.egg-info beside its sources."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, tracked_copy

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="the tracked files are listed by git"),
]


def test_the_wheel_installs_clean_and_runs_from_a_fresh_environment(tmp_path: Path) -> None:
    source, dist = tracked_copy(tmp_path / "source"), tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(dist), str(source)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,), (sdist,) = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", str(wheel), str(sdist)], capture_output=True, text=True
    )
    assert checked.returncode == 0 and checked.stdout.count("PASSED") == 2, checked.stdout + checked.stderr

    # every file of the package that is not Python source is read at run time (spec/data, the warm-up report)
    wanted = {
        str(path.relative_to(ROOT)) for path in (ROOT / "ncucampaign").rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    }  # fmt: skip
    with zipfile.ZipFile(wheel) as held_in, tarfile.open(sdist) as shipped_in:
        held, shipped = set(held_in.namelist()), shipped_in.getnames()
    assert wanted and wanted <= held, sorted(wanted - held)
    prefix = shipped[0].split("/")[0]
    for name in ("schemas/campaign.schema.json", "schemas/manifest.schema.json", "campaigns/try.yaml"):
        assert f"{prefix}/{name}" in shipped, name

    venv, work = tmp_path / "venv", tmp_path / "work"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python, tool = venv / "bin" / "python", venv / "bin" / "ncucampaign"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}/usr/bin:/bin"  # no checkout, no fake ncu
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)], capture_output=True, text=True, env=env, timeout=600
    )
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    with tarfile.open(sdist) as archive:
        archive.extractall(work, filter="data")
    examples = work / prefix / "campaigns"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(tool), *args], cwd=examples, capture_output=True, text=True, env=env, timeout=300)

    where = subprocess.run([str(python), "-c", "import ncucampaign; print(ncucampaign.__file__)"], cwd=work,
                           capture_output=True, text=True, env=env)  # fmt: skip
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr
    version = cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("ncucampaign "), version.stderr
    schema = cli("schema")
    assert schema.returncode == 0 and json.loads(schema.stdout) == json.loads(
        (ROOT / "schemas" / "campaign.schema.json").read_text()
    )
    for command in (("validate", "try.yaml"), ("plan", "try.yaml")):
        done = cli(*command)
        assert done.returncode == 0, (command, done.stdout[-2000:] + done.stderr[-2000:])
    assert "ncu invocations" in cli("plan", "try.yaml").stdout
