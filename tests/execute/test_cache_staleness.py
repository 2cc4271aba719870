"""The cached timing pass (and discovery trace) is taken again only for the same workload:
a module the script imports, an untracked file, an exported variable change it; a damaged entry is
dropped and the pass run again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FAKE_APP, campaign_text, fake_env, run_cli

pytestmark = pytest.mark.slow  # runs the CLI end to end


def workload(folder: Path) -> Path:
    """A script that imports a module beside it, which runs the fake application."""
    (folder / "helper.py").write_text(f"import runpy\nrunpy.run_path({str(FAKE_APP)!r}, run_name='__main__')\n")
    (folder / "app.py").write_text(
        "import sys\nsys.path.insert(0, __import__('os').path.dirname(__file__))\nimport helper\n"
    )
    campaign = folder / "camp.yaml"
    text = campaign_text("- name: norm\n  kernel_name: rmsnorm_kernel\n")
    campaign.write_text(
        text.replace(
            f"[{json.dumps(sys.executable)}, {json.dumps(str(FAKE_APP))}]", f"[{json.dumps(sys.executable)}, app.py]"
        )
    )
    return campaign


def timed_now(folder: Path, **env: str) -> bool:
    """Run weighed; whether the timing pass ran in this run (not taken from the cache)."""
    done = run_cli(
        "run", "camp.yaml", "--weigh", "--out", "runs", cwd=folder, env=fake_env(FAKE_NCU_FIXTURE="name_exact", **env)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads((folder / "runs/camp/latest/manifest.json").read_text())
    assert manifest["gpu_time"] is not None, manifest["gpu_time_note"]
    return any(r["name"].startswith("shared/timing-") for r in manifest["shared_runs"])


def test_a_changed_module_the_script_imports_times_the_application_again(tmp_path: Path) -> None:
    workload(tmp_path)
    assert timed_now(tmp_path) and not timed_now(tmp_path)
    (tmp_path / "helper.py").write_text((tmp_path / "helper.py").read_text() + "# changed\n")
    assert timed_now(tmp_path)


def test_an_untracked_file_of_a_git_workload_counts(tmp_path: Path) -> None:
    workload(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for command in (["init", "-q"], ["add", "app.py", "camp.yaml"], ["commit", "-qm", "w"]):
        subprocess.run([*git, *command], cwd=tmp_path, check=True, capture_output=True)
    assert timed_now(tmp_path) and not timed_now(tmp_path)
    (tmp_path / "helper.py").write_text((tmp_path / "helper.py").read_text() + "# changed\n")  # untracked
    assert timed_now(tmp_path)


def test_an_exported_variable_counts_and_a_shells_own_do_not(tmp_path: Path) -> None:
    workload(tmp_path)
    assert timed_now(tmp_path, KNOB="1") and not timed_now(tmp_path, KNOB="1", OLDPWD="/elsewhere")
    assert timed_now(tmp_path, KNOB="2")


def test_a_damaged_cached_pass_is_dropped_and_timed_again(tmp_path: Path) -> None:
    workload(tmp_path)
    assert timed_now(tmp_path)
    [cached] = (tmp_path / "runs" / ".cache" / "traces").glob("*.ncu-rep")
    cached.write_bytes(b"not a report any more\n")
    assert timed_now(tmp_path)  # and the note is not "not known" (timed_now checks gpu_time)
    assert not timed_now(tmp_path)  # the new entry is used


def test_the_runs_own_output_file_does_not_change_the_workload_and_a_file_that_does_is_named(tmp_path: Path) -> None:
    """Round 7, item 10: `run camp.yaml > run3.log` in the campaign's folder changed the workload's stamp, and the
    next run traced again without a word. The run's own output is no part of the workload; a file that is, changed,
    is named when the command is traced again."""
    targets = "".join(
        f"- name: {kind}_{{launch_skip}}\n  kernel_name: {kernel}\n  matrix:\n    launch_skip: [0, 1, 2, 3, 4]\n"
        for kind, kernel in (("rms", "rmsnorm_kernel"), ("gemm", "regex:nvjet"))
    )
    (tmp_path / "camp.yaml").write_text(campaign_text(targets))

    def run(log: str) -> str:
        with (tmp_path / log).open("w") as out:
            done = subprocess.run(
                [sys.executable, "-m", "ncucampaign", "run", "camp.yaml", "--out", "runs"],
                cwd=tmp_path, env=fake_env(), stdout=out, stderr=subprocess.STDOUT, timeout=300,
            )  # fmt: skip
        printed = (tmp_path / log).read_text()
        assert done.returncode == 0, printed
        return printed

    run("run1.log")
    again = run("run1.log")  # the same file, rewritten: as `>` does on the next run
    assert "traced again" not in again and "sharing: trace cached" in again, again
    other = run("run2.log")  # another file: run1.log, an earlier run's output, is no part of the workload either
    assert "traced again" not in other and "sharing: trace cached" in other, other
    (tmp_path / "helper_data.txt").write_text("read by the application, say\n")
    changed = run("run3.log")
    said = "traced again: the workload changed since this command's last trace: helper_data.txt (new)\n"
    assert said in changed, changed
