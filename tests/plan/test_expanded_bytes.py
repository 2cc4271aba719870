"""A campaign's bytes are bounded after its YAML aliases and matrices expand (round 7, item 2): one 131,000-character
value aliased into 10,000 targets' env (a 0.6 MB file) once validated ok, then `plan` needed 4 GB, `plan --format
json` was cut at 2 GB with exit 0, and a run of 1,100 such targets wrote a manifest no reader took."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncucampaign.plan.checks import MAX_EXPANDED_BYTES, text_bytes
from tests.conftest import run_cli

BIG = "x" * 131_000


def aliased(targets: int, matrix: int = 1) -> str:
    lines = [f"x-big: &big {BIG}", "application:", "  command: [python3, app.py]", "targets:"]
    for i in range(targets):
        lines.append(
            f"- name: t{i}_{{launch_skip}}\n  kernel_name: k\n  env: {{A: *big}}\n"
            f"  matrix: {{launch_skip: {list(range(matrix))}}}"
        )
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("targets", "matrix"), [(10_000, 1), (1_100, 1), (2, 600)])
def test_a_value_aliased_or_multiplied_past_the_bound_is_refused_with_the_bytes_it_would_make(
    tmp_path: Path, targets: int, matrix: int
) -> None:
    (tmp_path / "camp.yaml").write_text(aliased(targets, matrix))
    for command in ("validate", "plan"):
        done = run_cli(command, "camp.yaml", cwd=tmp_path)
        assert done.returncode == 2, done.stdout[-500:] + done.stderr[-500:]
        expected = targets * matrix * (len(BIG) + 40) / 2**20
        assert "once its YAML aliases and matrices are expanded" in done.stderr, done.stderr[-1000:]
        said = float(done.stderr.split("the campaign expands to ")[1].split(" MiB")[0].replace(",", ""))
        assert expected * 0.95 < said < expected * 1.1 and "the limit is 64.0 MiB" in done.stderr
        assert len(done.stdout) < 1000  # no plan: nothing of it printed


def test_the_same_value_in_few_enough_targets_plans(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(aliased(300))
    done = run_cli("plan", "camp.yaml", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-1000:]
    assert len(done.stdout) > 300 * len(BIG)  # every invocation's environment, whole


def test_text_bytes_counts_an_aliased_string_wherever_it_stands() -> None:
    shared = "y" * 1000
    assert text_bytes({"a": [shared, shared], "b": {"c": shared}}) == 3000 + 3
    assert MAX_EXPANDED_BYTES // len(BIG) < 1_100  # the run of 1,100 targets that no reader took is refused
