"""A run directory is data: what it names is checked before it is used (round 7, items 3-5). A resume keeps an ok
target only while its report is the one recorded; readers open no path the manifest names outside the run and run
no program it names; an older record's odd launch count, or a journal line nested 100,000 deep, is a damaged file
(exit 2), never an internal error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ncucampaign.execute.shared.read_out import OWN_REPORTS
from tests.conftest import campaign_text, load_manifest, run_cli, target

pytestmark = pytest.mark.slow  # end to end on the fake ncu

READERS = (("summarize",), ("report",), ("findings",), ("history",), ("export",), ("compare",))


def argv_of(reader: tuple[str, ...], run: Path) -> list[str]:
    """A reader's command line over `run` (history and compare take two runs: the same one twice)."""
    twice = reader in (("history",), ("compare",))
    return [*reader, str(run), *([str(run)] if twice else [])]


def finished(tmp_path: Path, *flags: str, targets: int = 3) -> Path:
    """A finished run of `targets` launches of one kernel (over OWN_REPORTS: read out of their union's report)."""
    skips = list(range(targets))
    text = campaign_text(
        f"- name: t{{launch_skip}}\n  kernel_name: rmsnorm_kernel\n  matrix:\n    launch_skip: {skips}\n"
    )
    (tmp_path / "camp.yaml").write_text(text)
    done = run_cli("run", "camp.yaml", "--out", "runs", *flags, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return load_manifest(tmp_path / "runs")[0]


def edit_manifest(run: Path, change: Any) -> None:
    data = json.loads((run / "manifest.json").read_text())
    change(data)
    (run / "manifest.json").write_text(json.dumps(data))


def test_a_resume_runs_again_an_ok_target_whose_report_is_gone_or_not_the_one_recorded(tmp_path: Path) -> None:
    """Before: t1's report deleted and t2's overwritten with garbage, the resume kept both ok."""
    run = finished(tmp_path, "--no-share")
    (run / "reports" / "t1.ncu-rep").unlink()
    (run / "reports" / "t2.ncu-rep").write_bytes(b"garbage")
    done = run_cli("run", "--resume", str(run), cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "2 ok target(s) run again" in done.stderr and "t1.ncu-rep is missing" in done.stderr, done.stderr
    after = load_manifest(tmp_path / "runs")[1]
    assert [len(target(after, name)["attempts"]) for name in ("t0", "t1", "t2")] == [1, 2, 2]
    assert all(target(after, name)["status"] == "ok" for name in ("t0", "t1", "t2"))
    assert (run / "reports" / "t1.ncu-rep").stat().st_size == target(after, "t1")["report"]["bytes"]


def test_a_forged_ok_record_without_its_report_is_run_again(tmp_path: Path) -> None:
    run = finished(tmp_path, "--no-share")
    record = target(load_manifest(tmp_path / "runs")[1], "t1")
    record["report"] = {**record["report"], "path": "reports/never-written.ncu-rep"}
    with (run / "manifest.journal").open("a") as journal:
        journal.write(json.dumps({"target": record}) + "\n")
    done = run_cli("run", "--resume", str(run), cwd=tmp_path)
    assert done.returncode == 0 and "never-written.ncu-rep is missing" in done.stderr, done.stderr
    assert len(target(load_manifest(tmp_path / "runs")[1], "t1")["attempts"]) == 2


@pytest.mark.parametrize("path", ["/etc/passwd", "../../etc/passwd", "reports/../../../etc/passwd"])
def test_a_report_path_outside_the_run_is_a_damaged_manifest_for_every_reader(tmp_path: Path, path: str) -> None:
    """Before: findings and export opened `/etc/passwd` (named as t0's report)."""
    run = finished(tmp_path)
    edit_manifest(run, lambda data: data["targets"][0]["report"].update(path=path))
    for reader in (*READERS, ("run", "--resume")):
        done = run_cli(*argv_of(reader, run), cwd=tmp_path)
        assert done.returncode == 2, (reader, done.stdout[-2000:] + done.stderr[-2000:])
        assert "not a path inside the run directory" in done.stderr, (reader, done.stderr)


def test_a_report_link_out_of_the_run_is_not_read(tmp_path: Path) -> None:
    run = finished(tmp_path)
    report = run / target(load_manifest(tmp_path / "runs")[1], "t0")["report"]["path"]
    outside = tmp_path / "outside.ncu-rep"
    outside.write_bytes(report.read_bytes())
    report.unlink()
    report.symlink_to(outside)
    done = run_cli("findings", str(run), cwd=tmp_path)
    assert done.returncode == 2 and "leads outside the run directory" in done.stderr, done.stdout + done.stderr


def test_export_runs_this_machines_ncu_never_the_program_a_run_directory_names(tmp_path: Path) -> None:
    """Before: export ran `obtained.split_argv[0]` of the manifest when --ncu was not given."""
    run = finished(tmp_path, targets=OWN_REPORTS + 2)
    planted = tmp_path / "planted"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {planted}\n")
    evil.chmod(0o755)

    def forge(data: dict[str, Any]) -> None:
        for record in data["targets"]:
            record["obtained"]["split_argv"][0] = str(evil)

    edit_manifest(run, forge)
    done = run_cli("export", str(run), cwd=tmp_path)
    assert not planted.exists(), done.stdout + done.stderr
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.mark.parametrize("words", [["--section-folder", "/tmp/rules"], ["--config-file", "on"], ["--kernel-name"]])
def test_export_refuses_a_split_command_no_run_writes(tmp_path: Path, words: list[str]) -> None:
    """A forged option such as --section-folder would have ncu run the rule files of a folder the file names."""
    run = finished(tmp_path, targets=OWN_REPORTS + 2)

    def forge(data: dict[str, Any]) -> None:
        for record in data["targets"]:
            argv = record["obtained"]["split_argv"]
            record["obtained"]["split_argv"] = [*argv[:3], *words, *argv[3:]]

    edit_manifest(run, forge)
    done = run_cli("export", str(run), "--only", "t0", cwd=tmp_path)
    assert done.returncode == 1 and "is not one a run writes" in done.stderr, done.stdout + done.stderr


@pytest.mark.parametrize("count", ["²", "9" * 5000, "-1", ""])
def test_an_older_records_odd_launch_count_is_a_damaged_manifest_not_an_internal_error(
    tmp_path: Path, count: str
) -> None:
    """Before: `--launch-count ²` ('²'.isdigit() is true, int() raises) or 5,000 digits: exit 70 everywhere."""
    run = finished(tmp_path)

    def older(data: dict[str, Any]) -> None:
        record = data["targets"][0]
        for key in ("collects_sections", "launch_count", "metrics"):
            record.pop(key, None)
        record["argv"] = ["ncu", "--launch-count", count, "python3", "app.py"]

    edit_manifest(run, older)
    for reader in (*READERS, ("run", "--resume")):
        done = run_cli(*argv_of(reader, run), cwd=tmp_path)
        assert done.returncode != 70 and "internal error" not in done.stderr, (reader, done.stderr[-2000:])
        if count != "-1":
            assert done.returncode == 2, (reader, done.stdout[-1000:] + done.stderr[-1000:])


def test_a_journal_line_nested_deep_is_damaged_and_says_how_to_go_on(tmp_path: Path) -> None:
    run = finished(tmp_path)
    with (run / "manifest.journal").open("a") as journal:
        journal.write("[" * 100_000 + "]" * 100_000 + "\n")
        journal.write(json.dumps({"manifest": {}}) + "\n")
    for reader in (*READERS, ("run", "--resume")):
        done = run_cli(*argv_of(reader, run), cwd=tmp_path)
        assert done.returncode == 2, (reader, done.stdout[-1000:] + done.stderr[-1000:])
        assert "line 1 is damaged" in done.stderr and "head -n 0" in done.stderr, (reader, done.stderr[-1000:])
