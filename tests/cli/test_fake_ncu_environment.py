"""The fake ncu and the campaigns' python3 run under the tests' own interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import fake_env


@pytest.mark.slow  # runs the CLI end to end
def test_the_fake_ncu_runs_under_the_tests_own_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # as outside the venv: another python3 comes first
    found = subprocess.run(
        ["python3", "-c", "import site, sys; site.main(); print(sys.prefix)"],
        env=fake_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert found == sys.prefix, found  # the same interpreter and the same venv (its packages: zstandard)
