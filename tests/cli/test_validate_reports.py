"""validate says what run would meet: a regex ncu refuses is an error, a script that is not there a
warning at the command's line, a file with problems and lint errors prints them in order and counts
both, and the shipped examples validate (or say in their first line that they do not, on purpose)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, fake_env, run_cli

APP = "application:\n  command: python3 bench.py\n"


def validate(tmp_path: Path, text: str, script: bool = True) -> subprocess.CompletedProcess[str]:
    (tmp_path / "camp.yaml").write_text(text)
    if script:
        (tmp_path / "bench.py").write_text("")
    return run_cli("validate", "camp.yaml", cwd=tmp_path, env=fake_env())


def test_a_kernel_regex_that_does_not_compile_is_an_error_at_validate(tmp_path: Path) -> None:
    """Before: a warning NCU005 'ncu will refuse it', then `ok`, rc 0; run then ended the target usage_error."""
    done = validate(tmp_path, APP + "targets:\n  - name: a\n    kernel_name: regex:nvjet(sm90\n")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "camp.yaml:5: error NCU005 targets[0].kernel_name: the regex does not compile" in done.stderr
    assert "camp.yaml: not ok" in done.stdout


def test_a_script_that_is_not_there_is_a_warning_at_the_commands_line(tmp_path: Path) -> None:
    """Before: validate said ok, and run started every target after the trace had found it cannot start."""
    done = validate(tmp_path, APP + "targets:\n  - name: a\n  - name: b\n", script=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (warning,) = [line for line in done.stderr.splitlines() if "NCU013" in line]  # once, not once a target
    assert warning.startswith("camp.yaml:2: warning NCU013 application.command: bench.py: no such file in ")
    assert str(tmp_path) in warning


def test_the_script_is_looked_for_where_the_application_runs(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "bench.py").write_text("")
    moved = "application:\n  command: python3 -u bench.py\n  cwd: work\ntargets:\n  - name: a\n"
    assert "NCU013" not in validate(tmp_path, moved, script=False).stderr
    own = APP + "targets:\n  - name: a\n    command: python3 other.py\n"
    (warning,) = [line for line in validate(tmp_path, own).stderr.splitlines() if "NCU013" in line]
    assert warning.startswith("camp.yaml:5: warning NCU013 targets[0].command: other.py: no such file")


@pytest.mark.parametrize("command", ["python3 -m bench", "python3 -c 'print(1)'", "ncu --version"])
def test_commands_that_name_no_file_are_not_looked_for(tmp_path: Path, command: str) -> None:
    assert "NCU013" not in validate(tmp_path, f"application:\n  command: {command}\ntargets:\n  - name: a\n").stderr


@pytest.mark.parametrize(
    ("application", "said"),
    [
        ("  command: ./run.sh\n", "application.command: ./run.sh: not executable (chmod +x ./run.sh)"),
        ("  command: no_such_program_xyz --steps 2\n", "application.command: no_such_program_xyz: no such program on PATH"),
        ("  command: python3 bench.py\n  cwd: nowhere\n", "application.cwd: {tmp}/nowhere: no such folder"),
        ("  command: python3 bench.py\n  cwd: bench.py\n", "application.cwd: {tmp}/bench.py: a file, not a folder"),
        ("  command: ./tools\n", "application.command: ./tools: a folder in {tmp}, not a file"),
        ("  command: python3 tools\n", "application.command: tools: a folder in {tmp} without __main__.py"),
        ("  command: ./bad.sh\n", "./bad.sh: its #! line names /no/such/sh, which is not a program here"),
        ("  command: ./blob\n", "./blob: neither a #! script nor an ELF program (Exec format error)"),
        ("  command: python3 -m no_such_module_xyz\n",
         "application.command: python3 -m no_such_module_xyz: python3 here finds no module 'no_such_module_xyz' (started in {tmp})"),
    ],
)  # fmt: skip
def test_validate_sees_an_application_that_cannot_start(tmp_path: Path, application: str, said: str) -> None:
    """Before: validate said ok (or 'no such file' of a folder), and run met each at the first start."""
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")  # without its exec bit
    (tmp_path / "tools").mkdir()
    for name, text in (("bad.sh", b"#!/no/such/sh\necho\n"), ("blob", b"MZ\x90\x00 not a program here")):
        (tmp_path / name).write_bytes(text)
        (tmp_path / name).chmod(0o755)
    done = validate(tmp_path, f"application:\n{application}targets:\n  - name: a\n")
    assert done.returncode == 0, done.stdout + done.stderr
    (warning,) = [line for line in done.stderr.splitlines() if "NCU013" in line]
    assert said.format(tmp=tmp_path) in warning, warning


def test_problems_and_lint_errors_print_in_order_and_are_both_counted(tmp_path: Path) -> None:
    """Before: the count line `1 problem` came (on stderr) before the NCU009 error (on stdout), and did
    not count it."""
    text = APP + "targets:\n  - name: a\n    sections: [NoSuchSection]\n  - name: b\n    launch_count: -3\n"
    (tmp_path / "camp.yaml").write_text(text)
    (tmp_path / "bench.py").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "ncucampaign", "validate", "camp.yaml"],
        cwd=tmp_path, env=fake_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert done.returncode == 2
    assert [line.split(" ")[0] for line in lines] == ["camp.yaml:7:", "camp.yaml:5:", "camp.yaml:"], lines
    assert lines[-1] == "camp.yaml: 1 problem, 1 error the installed ncu refuses"


def test_every_shipped_example_validates_or_says_in_its_first_lines_that_it_does_not() -> None:
    """campaigns/spread.yaml's typo_section is refused on purpose; its comment said 'NCU009 warns'."""
    for campaign in sorted((ROOT / "campaigns").glob("*.yaml")):
        done = run_cli("validate", str(campaign), cwd=ROOT, env=fake_env())
        head = "".join(campaign.read_text().splitlines(keepends=True)[:3])
        expected = 2 if "validate exits 2 on this file" in head else 0
        assert done.returncode == expected, f"{campaign.name}: {done.stdout}{done.stderr}"


def test_run_says_a_missing_folder_once_naming_the_application(tmp_path: Path) -> None:
    """Before: `target a: its working directory ... is not a directory`, as if one target had it."""
    (tmp_path / "camp.yaml").write_text(APP + "  cwd: nowhere\ntargets:\n  - name: a\n  - name: b\n")
    done = run_cli("run", "camp.yaml", cwd=tmp_path, env=fake_env())
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"error: application.cwd: {tmp_path}/nowhere is not a folder" in done.stderr
    assert "target a" not in done.stderr and not (tmp_path / "runs").exists()


def test_validate_keeps_its_findings_on_one_stream_and_counts_warnings_beside_problems(tmp_path: Path) -> None:
    """Before: problems went to stderr and lint to stdout (`validate f.yaml > log` split them), and the count line
    `1 problem` left out the NCU001 warning printed just before it. Now findings are on stderr, as run's and
    plan's are, and each file's verdict on stdout."""
    text = APP + "targets:\n  - name: a\n    nvtx_include: decode_step\n  - name: b\n    launch_count: -3\n"
    done = validate(tmp_path, text)
    assert done.returncode == 2 and done.stdout == "camp.yaml: 1 problem, 1 warning\n", done.stdout
    lines = done.stderr.splitlines()
    assert any("NCU001" in line for line in lines) and any("launch_count" in line for line in lines)
    fine = validate(tmp_path, APP + "targets:\n  - name: a\n    nvtx_include: decode_step\n")
    assert fine.stdout == "camp.yaml: ok (1 target, 1 ncu invocation, 1 warning)\n" and "NCU001" in fine.stderr


@pytest.mark.parametrize("command", ["python3 pkg", "./ok.sh", "/bin/true", "./rel.sh"])
def test_validate_says_nothing_of_an_application_that_starts(tmp_path: Path, command: str) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__main__.py").write_text("")
    for name, text in (("ok.sh", "#!/bin/sh\n"), ("rel.sh", "#!sh-of-the-kernels-own\n")):
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod(0o755)
    done = validate(tmp_path, f"application:\n  command: {command}\ntargets:\n  - name: a\n")
    assert done.returncode == 0 and "NCU013" not in done.stderr, done.stdout + done.stderr
