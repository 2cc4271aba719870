"""An application that cannot start (its script is not there) is started once: the run says why once,
closes every other target of the same command line unstarted, naming the run that found it, is not retried
for every target, and counts the runs that met the error by kind."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import FAKE_APP, campaign_text, fake_env, load_manifest, run_cli


def target_message(manifest: dict, name: str) -> str:
    return next(t["message"] for t in manifest["targets"] if t["name"] == name)


def write_unstartable(folder: Path, targets: int, defaults: str = "") -> None:
    """camp.yaml: `targets` targets of an application that fails on its first import."""
    listed = "".join(f"  - name: t{i}\n    kernel_name: rmsnorm_kernel\n    launch_skip: {i}\n" for i in range(targets))
    (folder / "camp.yaml").write_text(
        "application:\n"
        f"  command: [{sys.executable!r}, -c, 'import no_such_module_for_ncucampaign']\n"
        f"defaults:\n  launch_count: 1\n  retries: 2\n  retry_delay: 0\n{defaults}"
        f"targets:\n{listed}"
    )


CAMPAIGN = """application:
  command: python3 nosuch_app.py
defaults:
  sections: SpeedOfLight
  launch_count: 1
  retries: 2
  retry_delay: 0
targets:
  - name: a
    kernel_name: rmsnorm_kernel
  - name: b
    kernel_name: regex:nvjet
  - name: c
    nvtx_include: mlp/
"""


@pytest.mark.slow  # runs the CLI end to end
def test_an_application_that_cannot_start_shows_its_error_and_is_not_retried_for_every_target(tmp_path: Path) -> None:
    write_unstartable(tmp_path, 4, "  share: 'off'\n")
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    manifest = load_manifest(tmp_path / "runs")[1]
    error = "ModuleNotFoundError: No module named 'no_such_module_for_ncucampaign'"
    for record in manifest["targets"]:
        assert record["status"] == "app_failed" and error in record["message"], record["message"]
    # the first target may be flaky and is retried; from the second, the same error is the workload's, and once three
    # first attempts ended with it, the command's: the fourth is not started
    assert [len(t["attempts"]) for t in manifest["targets"]] == [3, 1, 1, 0]
    assert target_message(manifest, "t3").startswith("not started: the first attempts of 3 targets ended with")
    assert "not retried: the first attempts of 2 targets ended with this application error" in target_message(
        manifest, "t1"
    )
    assert "log: logs/t0.log" in done.stdout  # where the whole output is


@pytest.mark.slow  # runs the CLI end to end
def test_a_repeated_application_error_counts_the_trace_as_a_trace_not_a_target(tmp_path: Path) -> None:
    write_unstartable(tmp_path, 3)
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    manifest = load_manifest(tmp_path / "runs")[1]
    messages = [t["message"] for t in manifest["targets"] if "not retried" in t["message"]]
    assert messages, [t["message"] for t in manifest["targets"]]
    # 3 targets and the shared run before them: never "the first attempts of 4 targets" (a 21-target
    # campaign, whose discovery trace failed first, said 22)
    for message in messages:
        counted = re.search(r"first attempts of (.*) ended", message)
        assert counted is not None and re.search(r"(the discovery trace|\d shared runs?)", counted[1]), message
        targets = re.search(r"(\d+) targets?$", counted[1])
        assert targets is None or int(targets[1]) <= 3, message


@pytest.mark.slow  # runs the CLI end to end
def test_runs_are_counted_by_kind() -> None:
    from ncucampaign.execute.attempt.repeated import RepeatedFailures

    failures = RepeatedFailures()
    for run in ("shared/trace-0123abcd", "t0", "t1", "shared/timing-1"):
        failures.note("ImportError", run)
    assert failures.count("ImportError") == 4 and failures.deterministic("ImportError")
    assert (
        failures.described("ImportError") == "the first attempts of the discovery trace, the timing pass and 2 targets"
    )


@pytest.mark.slow
def test_an_application_that_cannot_start_is_not_retried(tmp_path: Path) -> None:
    """N4: `python3 nosuch_app.py` ("can't open file", exit 2) was retried after 10 s."""
    text = campaign_text("- name: a\n  kernel_name: k\n").replace(json.dumps(str(FAKE_APP)), '"nosuch_app.py"')
    text = text.replace("  retries: 0\n", "  retries: 2\n").replace("  retry_delay: 0\n", "  retry_delay: 10\n")
    (tmp_path / "camp.yaml").write_text(text)
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env())
    assert done.returncode == 1, done.stdout + done.stderr
    (record,) = load_manifest(tmp_path / "runs")[1]["targets"]
    assert record["status"] == "app_failed" and len(record["attempts"]) == 1, record["attempts"]
    assert "can't open file" in record["message"] and "not retried: the application cannot start" in record["message"]


@pytest.mark.slow  # three CLI runs against the fake ncu
@pytest.mark.parametrize("share", [True, False])
def test_the_application_is_started_once_and_the_why_said_once(tmp_path: Path, share: bool) -> None:
    """Before: every target started after the discovery trace had found it cannot start, and the same
    `can't open file` sentence was printed 6 times (3 progress lines, 3 `alone:` lines). Since round 7 a target it
    closes carries the cause in its message: the first such line says it, the others refer to it."""
    (tmp_path / "camp.yaml").write_text(CAMPAIGN)
    done = run_cli("run", "camp.yaml", *([] if share else ["--no-share"]), cwd=tmp_path, env=fake_env())
    assert done.returncode == 1, done.stdout + done.stderr
    said = [line for line in done.stdout.splitlines() if "can't open file" in line]
    # a target's line (with --no-share, the started one's and the first closed one's), the grouped line, sharing's
    assert len(said) <= 3 and sum(line.startswith("[") for line in said) == (1 if share else 2), done.stdout
    _, manifest = load_manifest(tmp_path / "runs")
    records = [*manifest["targets"], *manifest["shared_runs"]]
    assert sum(len(record["attempts"]) for record in records) == 1  # one start, not retried
    found = "the discovery trace shared/trace-" if share else "target a"
    unstarted = [t for t in manifest["targets"] if not t["attempts"]]
    assert len(unstarted) == (3 if share else 2)
    for target in unstarted:
        assert target["status"] == "app_failed"
        assert target["message"].startswith(f"not started: {found}") and "cannot start" in target["message"]


@pytest.mark.slow
def test_another_command_line_still_starts(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("")
    text = CAMPAIGN.replace("  - name: c\n", "  - name: c\n    command: python3 app.py\n")
    (tmp_path / "camp.yaml").write_text(text)
    run_cli("run", "camp.yaml", "--no-share", cwd=tmp_path, env=fake_env())
    targets = {t["name"]: t for t in load_manifest(tmp_path / "runs")[1]["targets"]}
    assert targets["c"]["attempts"] and not targets["b"]["attempts"]


def test_the_targets_an_unstartable_application_closes_say_its_cause_once_grouped(tmp_path: Path) -> None:
    """Round 7, item 11: 60 targets closed 'not started: the discovery trace ... found that the application cannot
    start', the cause (`can't open file`) only in the sharing line below; grouped, the line lost it."""
    from tests.conftest import run_cli

    targets = "".join(f"- name: t{i}\n  kernel_name: k{i % 2}\n" for i in range(60))
    (tmp_path / "camp.yaml").write_text(
        f"application:\n  command: [python3, missing.py]\ndefaults:\n  launch_count: 1\ntargets:\n{targets}"
    )
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    grouped = next(line for line in done.stdout.splitlines() if line.startswith("60 targets app_failed"))
    assert "found that the application cannot start" in grouped and "can't open file" in grouped, grouped
