"""The commands of the README and docs/ as written: every `ncucampaign` line
parses and names files that exist, and the "Try it without a GPU" block runs, verbatim, against the
fake ncu."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ncucampaign.cli import build_parser
from tests.conftest import ROOT, checkout_in, docs_text

BLOCKS = re.findall(r"```sh\n(.*?)```", docs_text(), re.S)  # the README's first
COMMANDS = [line.strip() for block in BLOCKS for line in block.splitlines() if line.strip().startswith("ncucampaign ")]


def words_of(line: str) -> list[str]:
    words = shlex.split(line, comments=True)
    return words[: words.index(">")] if ">" in words else words


@pytest.mark.parametrize("line", COMMANDS)
def test_every_readme_command_parses_and_its_campaign_files_exist(line: str) -> None:
    words = words_of(line)
    build_parser().parse_args(words[1:])  # argparse exits (a failed test) on an unknown option
    for word in words:
        if word.startswith("campaigns/") and word.endswith(".yaml"):
            assert (ROOT / word).is_file(), f"{line}: {word} does not exist"


@pytest.mark.slow
def test_the_try_it_without_a_gpu_block_runs_as_written(tmp_path: Path) -> None:
    block = next(b for b in BLOCKS if "campaigns/try.yaml" in b)
    checkout_in(tmp_path, "campaigns/try.yaml", "tests/fake_ncu", "tests/fixtures/reports")
    python = shlex.quote(sys.executable)
    # .ci/try's .venv, which the block must activate itself: before, it did not, and its next command
    # was `ncucampaign: command not found`
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    activate = f'ncucampaign() {{ PYTHONPATH={shlex.quote(str(ROOT))} {python} -m ncucampaign "$@"; }}\n'
    (tmp_path / ".venv" / "bin" / "activate").write_text(activate)
    script = ""
    for line in block.splitlines():  # each line as written; its exit status printed after it
        label = shlex.quote(line.split("#")[0].strip())
        script += f'{line}\necho "exit $? <- "{label}\n' if line.strip() else ""
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    found = re.findall(r"^exit (\d+) <- (ncucampaign .*)$", done.stdout, re.M)
    statuses = {command: status for status, command in found}
    assert statuses == {
        "ncucampaign run campaigns/try.yaml": "1",  # as the README says: `typo` on purpose
        "ncucampaign summarize campaigns/runs/try/latest": "0",
        "ncucampaign findings campaigns/runs/try/latest": "0",
        "ncucampaign report campaigns/runs/try/latest": "0",
    }, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    written = [p for p in (tmp_path / "campaigns" / "runs" / "try").glob("*/report.html") if p.parent.name != "latest"]
    assert written
    # as the block's comment says: the run's own folder, not `latest`, which the next run moves
    assert f"campaigns/runs/try/{written[0].parent.name}/report.html" in done.stdout


def test_ci_try_ends_by_printing_the_try_it_block_verbatim() -> None:
    script = (ROOT / ".ci" / "try").read_text()
    printing = next(line for line in script.splitlines() if line.startswith("awk ") and "README.md" in line)
    printed = subprocess.run(["bash", "-c", printing], cwd=ROOT, capture_output=True, text=True, check=True)
    block = next(b for b in BLOCKS if "campaigns/try.yaml" in b)
    assert printed.stdout.splitlines() == [f"  {line}" for line in block.splitlines()]
    assert block.splitlines()[0].startswith(". .venv/bin/activate")


@pytest.mark.slow
def test_the_readme_ci_gate_example_runs_as_written(tmp_path: Path) -> None:
    """The one-line A/B gate against the fake ncu, with the Try block's environment."""
    line = next(c for c in COMMANDS if c.startswith("ncucampaign ab campaigns/try.yaml"))
    checkout_in(tmp_path, "campaigns/try.yaml", "tests/fake_ncu", "tests/fixtures/reports", "ncucampaign/spec/data")
    python = shlex.quote(sys.executable)
    script = (
        f'export PATH="$PWD/tests/fake_ncu:$PATH" FAKE_NCU_REPORTS="$PWD/tests/fixtures/reports"\n'
        f'ncucampaign() {{ PYTHONPATH={shlex.quote(str(ROOT))} {python} -m ncucampaign "$@"; }}\n{line}\n'
    )
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "A/B: 5 pairs of runs in " in done.stdout and "Traceback" not in done.stderr
    verdicts, gate = done.stdout.strip().splitlines()[-2:]
    assert verdicts.startswith("verdicts: ") and "SAME" in verdicts and "SLOWER" not in verdicts, verdicts
    assert gate.startswith("gate: pass: "), gate
    runs = list((tmp_path / "campaigns" / "runs" / "try").glob("ab-*/[AB]/try/2*/manifest.json"))
    assert len(runs) == 10  # 5 pairs, A and B each
    assert "manifest:" not in done.stdout + done.stderr  # the runs' tables only with --verbose
    assert done.stderr.count("ncucampaign ab: pair ") == 10  # a line a run
    as_json = subprocess.run(
        ["bash", "-c", script.replace("--pairs 5", "--pairs 1 --format json")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    verdicts = json.loads(as_json.stdout)["verdicts"]  # stdout is one JSON document
    assert as_json.returncode == 0 and {v["verdict"] for v in verdicts} >= {"AMBIGUOUS"}, as_json.stderr[-2000:]


@pytest.mark.slow
def test_a_pasted_plan_gives_every_report_the_run_gives(tmp_path: Path) -> None:
    """Before the fix: `plan campaigns/try.yaml | bash` ran the discovery trace and nothing else (0 of 4)."""
    checkout_in(tmp_path, "campaigns/try.yaml", "tests/fake_ncu", "tests/fixtures/reports", "ncucampaign/spec/data")
    python = shlex.quote(sys.executable)
    script = (
        f'export PATH="$PWD/tests/fake_ncu:$PATH" FAKE_NCU_REPORTS="$PWD/tests/fixtures/reports"\n'
        f'ncucampaign() {{ PYTHONPATH={shlex.quote(str(ROOT))} {python} -m ncucampaign "$@"; }}\n'
        "ncucampaign plan campaigns/try.yaml --out pasted | bash\n"
        "ncucampaign run campaigns/try.yaml --out ran\n"
    )
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    ran = {
        Path(t["report"]["path"]).stem
        for t in json.loads((tmp_path / "ran/try/latest/manifest.json").read_text())["targets"]
        if t.get("report")
    }
    pasted = {p.stem for p in (tmp_path / "pasted/try/plan/reports").glob("*.ncu-rep")}
    assert len(ran) == 4 and ran <= pasted, (ran, pasted, done.stdout[-2000:], done.stderr[-2000:])
