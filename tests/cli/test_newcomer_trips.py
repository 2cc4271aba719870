"""What a newcomer trips on in the first hour, each through the real CLI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import FAKE_NCU_DIR, campaign_text, docs_text, fake_env, load_manifest, run_cli

pytestmark = pytest.mark.slow  # runs the CLI end to end

TWO = "- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  kernel_name: rmsnorm_kernel\n  launch_skip: 1\n"


@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_campaign_file_after_only_is_the_file_not_a_target_name(tmp_path: Path, command: str) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text(TWO))
    done = run_cli(command, "--only", "b", "camp.yaml", *(["--out", "runs"] if command == "run" else []), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    if command == "plan":
        assert "[1/1] b" in done.stdout and "# [1/1] a" not in done.stdout
    else:
        assert [t["name"] for t in load_manifest(tmp_path / "runs")[1]["targets"]] == ["b"]
    alone = run_cli(command, "--only", "camp.yaml", cwd=tmp_path)
    assert alone.returncode == 2 and "--only needs at least one target name" in alone.stderr


def test_gpus_that_cannot_be_checked_are_said_to_be_taken_as_given(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n"))
    bin_dir = tmp_path / "bin"  # the fake ncu without the fake nvidia-smi beside it
    bin_dir.mkdir()
    (bin_dir / "ncu").symlink_to(FAKE_NCU_DIR / "ncu")
    env = fake_env()
    env["PATH"] = os.pathsep.join([str(bin_dir), *(p for p in env["PATH"].split(os.pathsep) if p != str(FAKE_NCU_DIR))])
    env.pop("CUDA_VISIBLE_DEVICES", None)
    done = run_cli("run", "camp.yaml", "--gpus", "0,7", "--out", "runs", cwd=tmp_path, env=env)
    assert "--gpus 0,7: cannot check that these GPUs exist" in done.stderr, done.stderr


def test_the_readme_quotes_off_wherever_a_campaign_key_takes_it() -> None:
    readme = docs_text()
    for line in re.findall(r"`([a-z_]+: off)`", readme):
        assert yaml.safe_load(line) != {line.split(":")[0]: "off"}, f"README writes `{line}`: YAML reads it as false"
    assert "`share: 'off'`" in readme


def write_unstartable(folder: Path, targets: int, defaults: str = "") -> None:
    """camp.yaml: `targets` targets of an application that fails on its first import."""
    listed = "".join(f"  - name: t{i}\n    kernel_name: rmsnorm_kernel\n    launch_skip: {i}\n" for i in range(targets))
    (folder / "camp.yaml").write_text(
        "application:\n"
        f"  command: [{sys.executable!r}, -c, 'import no_such_module_for_ncucampaign']\n"
        f"defaults:\n  launch_count: 1\n  retries: 2\n  retry_delay: 0\n{defaults}"
        f"targets:\n{listed}"
    )


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


def target_message(manifest: dict, name: str) -> str:
    return next(t["message"] for t in manifest["targets"] if t["name"] == name)


def test_a_run_directory_that_is_not_there_says_where_the_runs_are(tmp_path: Path) -> None:
    (tmp_path / "campaigns").mkdir()
    (tmp_path / "campaigns" / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n"))
    assert run_cli("run", "campaigns/camp.yaml", cwd=tmp_path).returncode == 0  # runs land in campaigns/runs/
    done = run_cli("summarize", "runs/camp/latest", cwd=tmp_path)
    assert done.returncode == 2 and f"did you mean {tmp_path / 'campaigns/runs/camp/latest'}?" in done.stderr
    elsewhere = run_cli("summarize", "nothing/here", cwd=tmp_path)
    assert elsewhere.returncode == 2 and "runs go to runs/<campaign>/ beside the campaign file" in elsewhere.stderr


LONG_KERNEL = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0"


@pytest.mark.parametrize("columns", [80, 120, 140])
def test_summarize_on_a_terminal_keeps_the_kernel_name_whole_and_drops_other_columns(
    tmp_path: Path, columns: int
) -> None:
    from rich.console import Console

    from ncucampaign.results.metrics import middle
    from ncucampaign.results.reading.runs import load_run
    from ncucampaign.results.tables.target_tables import target_table

    targets = "- name: attention\n  kernel_name: regex:flash\n  nvtx_include: decode_step/\n"
    (tmp_path / "camp.yaml").write_text(campaign_text(targets))
    assert run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path).returncode == 0
    record = load_run(tmp_path / "runs" / "camp").manifest.targets[0]
    record.results[0].kernel = LONG_KERNEL  # the fixture report's kernel is short
    console = Console(width=columns, record=True, force_terminal=True, color_system=None)
    console.print(target_table("run", record, width=columns))
    shown = console.export_text()
    assert middle(LONG_KERNEL) in shown, shown  # the name as --wide-less tables shorten it, never cut further
    assert max(len(line) for line in shown.splitlines()) <= columns
    assert shown.count("…") == 1, shown  # only the kernel name's own shortening: no column cut short
    assert ("not shown at this width" in shown) == (columns < 150), shown
    wide = Console(width=10_000, record=True, color_system=None)  # summarize --wide prints as if piped
    wide.print(target_table("run", record, wide=True, width=columns))
    whole = wide.export_text()
    assert LONG_KERNEL in whole and "NVTX" in whole and "not shown" not in whole


def test_validation_reports_every_problem_of_a_file_in_one_pass(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(
        "application:\n  command: python3 app.py\ndefaults:\n  launch_count: 1\ntargets:\n"
        "  - name: a\n    kernel_name: rmsnorm_kernel\n    kernel_name: other\n"  # a duplicate key
        "  - name: b\n    launch_count: -3\n"  # a model error
        "  - name: c\n    kernel_name: k\n    sections: [SpeedOfLite]\n"  # NCU009: ncu will refuse it
    )
    done = run_cli("validate", "camp.yaml", cwd=tmp_path, env=fake_env())
    assert done.returncode == 2
    assert "camp.yaml:8: targets[0].kernel_name: duplicate key (first given on line 7)" in done.stderr
    assert "camp.yaml:10: targets[1].launch_count: must be at least 1" in done.stderr
    assert "error NCU009 targets[2].sections[0]" in done.stdout and "did you mean 'SpeedOfLight'" in done.stdout
    (tmp_path / "shell.yaml").write_text(
        "application:\n  command: CUDA_VISIBLE_DEVICES=0 python3 app.py | tee out.txt\n"
        "targets:\n  - name: a\n    kernel_name: k\n    launch_count: 1\n"
    )
    shell = run_cli("validate", "shell.yaml", cwd=tmp_path, env=fake_env())
    assert shell.returncode == 2
    assert "'CUDA_VISIBLE_DEVICES=0' is a shell variable assignment" in shell.stderr
    assert "'|' is shell syntax" in shell.stderr  # the second problem of the same command, same pass


@pytest.mark.parametrize(
    ("ncu", "wheel", "problem"),
    [
        ("2025.3.1.0", "2026.3.1", False),
        ("2026.3.1.0", "2026.3.0", False),
        ("2026.3.1.0", "2025.3.1", True),
        (None, "2025.3.1", False),
        ("2026.1.0", None, False),
    ],
)
def test_a_reader_older_than_ncu_is_named_with_the_wheel_to_install(
    ncu: str | None, wheel: str | None, problem: bool
) -> None:
    from ncucampaign.results.reading.report_reader import reader_too_old

    found = reader_too_old(ncu, wheel)
    assert (found is not None) == problem
    if found:
        assert "pip install 'ncu-report>=2026.3'" in found


def test_run_refuses_before_anything_runs_when_the_reader_cannot_open_ncus_reports(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n"))
    # its own cache of what the installed ncu lists: the answer is cached per ncu binary, and the
    # other tests use the same fake ncu as 2025.3.1
    env = fake_env(FAKE_NCU_VERSION="2099.1.0.0", XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=env)
    assert done.returncode == 3 and "pip install 'ncu-report>=2099.1'" in done.stderr, done.stderr
    assert not (tmp_path / "runs").exists()


def test_runs_are_counted_by_kind() -> None:
    from ncucampaign.execute.attempt.repeated import RepeatedFailures

    failures = RepeatedFailures()
    for run in ("shared/trace-0123abcd", "t0", "t1", "shared/timing-1"):
        failures.note("ImportError", run)
    assert failures.count("ImportError") == 4 and failures.deterministic("ImportError")
    assert (
        failures.described("ImportError") == "the first attempts of the discovery trace, the timing pass and 2 targets"
    )


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
