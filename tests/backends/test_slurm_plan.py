"""Slurm arrays without a cluster: the batch script `plan --slurm` prints, the checks before anything
is submitted, and collect over damaged task records (with stand-in sbatch/squeue on PATH)."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from ncucampaign.backends.slurm.script import batch_script, check_slurm_args, slurm_time
from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.units import array_tasks
from tests.conftest import campaign_text, fake_env, invocation, run_cli

pytestmark = pytest.mark.slow  # runs the CLI end to end


def directives(script: str) -> dict[str, str]:
    found = {}
    for line in script.splitlines():
        if line.startswith("#SBATCH "):
            key, _, value = line[len("#SBATCH ") :].partition("=")
            found[key] = value
    return found


def test_plan_slurm_prints_a_valid_batch_script_matching_the_campaign(tmp_path: Path) -> None:
    targets = "- name: a\n  kernel_name: k\n- name: b\n  kernel_name: k2\n  devices: [0, 2]\n- name: c\n  timeout: 2h\n"
    (tmp_path / "camp.yaml").write_text(campaign_text(targets))
    done = run_cli("plan", "camp.yaml", "--slurm", "--no-share", "--slurm-arg=--partition=gpu", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    script = tmp_path / "array.sbatch"
    script.write_text(done.stdout)
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    found = directives(done.stdout)
    assert found["--array"] == "0-2"  # one task per target (sharing off)
    assert found["--gpus-per-task"] == "3"  # devices [0, 2]: the task must see three GPUs
    assert found["--time"] == slurm_time(2 * 3600 + 2 * 2 + 300)  # c: 2 h, one attempt, 2 x stop_grace, margin
    assert found["--signal"] == "B:INT@60"
    assert found["--partition"] == "gpu"
    assert re.search(
        r"^exec .* -m ncucampaign slurm-task .* --array 1 --index \"\$SLURM_ARRAY_TASK_ID\"$", done.stdout, re.M
    )


@pytest.mark.parametrize(
    ("args", "problem"),  # the forms that got past the check, and good ones
    [
        (["--array=0-3"], "sets --array itself"),
        (["-o/tmp/x"], "sets -o itself"),
        (["partition=gpu"], "pass sbatch options"),
        (["--comment=a\nb"], "line break"),
        (["--partition=debug --output=/any/file"], "one sbatch option per --slurm-arg"),
        (["--partition=debug\t--output=/any/file"], "one sbatch option per --slurm-arg"),
        (["-Jname --output=/any/file"], "one sbatch option per --slurm-arg"),
        (["--outp=/any/file"], "sets --output itself"),
        (["--err=/any/file"], "sets --error itself"),
        (["--arr=0-5"], "sets --array itself"),
        (["--sig=B:KILL@1"], "sets --signal itself"),
        (["--open=truncate"], "sets --open-mode itself"),
        (["--"], "pass sbatch options"),
        (["--partition=gpu", "--qos=high", "--time=1:00:00", "-Jname", "--gres=gpu:1"], None),
        # clusters of short options, as sbatch's getopt reads them (they got past the check)
        (["-Qo/tmp/x"], "sets -o itself"),
        (["-vo/tmp/x"], "sets -o itself"),
        (["-Qe/tmp/x"], "sets -e itself"),
        (["-Oa0-5"], "sets -a itself"),
        (["-Hvv"], None),
        (["-Jo", "-pgpu", "-qhigh"], None),  # a value, not options: -J's is "o"
        (["-Zx"], "not an sbatch short option"),
        (["-W"], "does not submit"),
        (["--test-only"], "does not submit"),
    ],
)
def test_slurm_args_are_checked(args: list[str], problem: str | None) -> None:
    found = check_slurm_args(args)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_slurm_time_is_days_hours_minutes() -> None:
    assert slurm_time(30) == "0-00:01:00"
    assert slurm_time(3601) == "0-01:01:00"
    assert slurm_time(3 * 86400 + 60) == "3-00:01:00"


def _stand_ins(folder: Path) -> None:
    """sbatch that accepts and runs nothing, squeue that knows no job: the logic around them, not Slurm."""
    folder.mkdir()
    for name, body in (("sbatch", "echo 4242"), ("squeue", "exit 0")):
        path = folder / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_run_slurm_without_sbatch_is_a_clear_error_and_creates_nothing(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: k\n"))
    env = fake_env()
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "sbatch").exists())
    done = run_cli("run", "camp.yaml", "--slurm", "--out", "runs", cwd=tmp_path, env=env)
    assert done.returncode == 3 and "sbatch not found" in done.stderr, done.stderr
    assert not (tmp_path / "runs").exists()


def _submitted_two_targets(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Targets a and b submitted as two array tasks (stand-in sbatch: job 4242), none of them started."""
    _stand_ins(tmp_path / "bin")
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n"))
    env = fake_env()
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    done = run_cli("run", "camp.yaml", "--slurm", "--no-share", "--out", "runs", cwd=tmp_path, env=env)
    assert done.returncode == 0 and "submitted Slurm array job 4242" in done.stdout, done.stdout + done.stderr
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()
    return run_dir, env


def test_collect_reports_a_damaged_task_record_and_a_task_that_never_finished(tmp_path: Path) -> None:
    run_dir, env = _submitted_two_targets(tmp_path)
    for index in (0, 1):  # what the two array tasks would run, as Slurm would start them
        task_env = {**env, "SLURM_ARRAY_TASK_ID": str(index), "SLURM_ARRAY_JOB_ID": "4242", "SLURM_JOB_ID": "43"}
        task = subprocess.run(
            [sys.executable, "-m", "ncucampaign", "slurm-task", str(run_dir), "--array", "1", "--index", str(index)],
            cwd=tmp_path,
            env=task_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert task.returncode == 0, task.stdout + task.stderr
    (run_dir / "slurm" / "tasks" / "4242_1.json").write_text('{"targets": [')  # damaged
    collected = run_cli("collect", str(run_dir), cwd=tmp_path, env=env)
    assert collected.returncode == 1, collected.stdout + collected.stderr
    assert "4242_1.json is damaged (not JSON: " in collected.stdout, collected.stdout  # cut short, not missing
    manifest = json.loads((run_dir / "manifest.json").read_text())
    a, b = manifest["targets"]
    assert a["status"] == "ok" and a["placement"]["array_task_id"] == 0
    assert b["status"] == "interrupted" and "its Slurm task (job 4242, task 1" in b["message"]
    again = run_cli(
        "slurm-task",
        str(run_dir),
        "--array",
        "1",
        "--index",
        "0",
        cwd=tmp_path,
        env={**env, "SLURM_ARRAY_TASK_ID": "0"},
    )
    assert again.returncode == 0 and "claimed by another task already" in again.stdout


@pytest.mark.parametrize("tasks", ["[[]]", '[["nope", "../../x"]]', '["ab"]', "[[1]]"])
def test_a_damaged_task_list_is_named_as_damaged(tmp_path: Path, tasks: str) -> None:
    """Before the fix: `[[]]` or `[["nope", "../../x"]]` in array-1.json ended 'claimed by another task
    already' with exit 0, as if all were well."""
    run_dir, env = _submitted_two_targets(tmp_path)
    listing = run_dir / "slurm" / "array-1.json"
    listing.write_text(json.dumps({**json.loads(listing.read_text()), "tasks": json.loads(tasks)}))
    task = run_cli(
        "slurm-task", str(run_dir), "--array", "1", "--index", "0", cwd=tmp_path,
        env={**env, "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_JOB_ID": "4242", "SLURM_JOB_ID": "43"},
    )  # fmt: skip
    assert task.returncode == 2, task.stdout + task.stderr
    assert "slurm/array-1.json is damaged" in task.stderr and "Traceback" not in task.stderr
    assert not list((run_dir / "slurm" / "claims").glob("*.claim"))  # nothing claimed


def _submitted_with_a_dead_task(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """One target submitted (stand-in sbatch), claimed by a task that died before it recorded anything."""
    _stand_ins(tmp_path / "bin")
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n"))
    env = fake_env()
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    assert run_cli("run", "camp.yaml", "--slurm", "--out", "runs", cwd=tmp_path, env=env).returncode == 0
    run_dir = (tmp_path / "runs" / "camp" / "latest").resolve()
    claim = {  # as a task writes it (backends/batch/files.py Claim)
        "backend": "slurm", "job_id": "4243", "array_job_id": "4242", "array_task_id": 0, "node": "n1",
        "cuda_visible_devices": "0", "record": "slurm/tasks/4242_0.json", "pid": 1, "claimed_at": "then",
    }  # fmt: skip
    (run_dir / "slurm" / "claims" / "a.claim").write_text(json.dumps(claim))
    return run_dir, env


def test_a_local_resume_of_a_slurm_run_is_not_undone_by_collect(tmp_path: Path) -> None:
    run_dir, env = _submitted_with_a_dead_task(tmp_path)
    assert run_cli("collect", str(run_dir), cwd=tmp_path, env=env).returncode == 1
    resumed = run_cli("run", "--resume", str(run_dir), cwd=tmp_path, env=env)  # here, not in Slurm
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert run_cli("collect", str(run_dir), cwd=tmp_path, env=env).returncode == 0
    record = json.loads((run_dir / "manifest.json").read_text())["targets"][0]
    assert record["status"] == "ok" and [a["status"] for a in record["attempts"]] == ["ok"]


def test_collect_where_slurm_is_not_merges_what_is_there_and_says_so(tmp_path: Path) -> None:
    run_dir, env = _submitted_with_a_dead_task(tmp_path)
    (tmp_path / "bin" / "squeue").unlink()  # the run directory read on a machine without Slurm
    done = run_cli("collect", str(run_dir), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr  # nothing failed that is known to have failed
    assert "squeue cannot say" in done.stdout
    record = json.loads((run_dir / "manifest.json").read_text())["targets"][0]
    assert record["status"] == "pending"  # not declared dead on a guess
    summary = run_cli("summarize", str(run_dir), cwd=tmp_path, env=env)
    assert summary.returncode == 0, summary.stderr


def test_ctrl_c_while_waiting_leaves_the_array_running_and_says_how_to_collect(tmp_path: Path) -> None:
    _stand_ins(tmp_path / "bin")
    (tmp_path / "bin" / "squeue").write_text("#!/bin/sh\necho 4242\n")  # the array never ends
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n"))
    env = fake_env()
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    waiting = subprocess.Popen(
        [sys.executable, "-m", "ncucampaign", "run", "camp.yaml", "--slurm", "--wait", "--out", "runs"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert waiting.stdout is not None
    line = waiting.stdout.readline()  # printed once submitted; then it waits
    assert "submitted Slurm array job 4242" in line, line
    waiting.send_signal(signal.SIGINT)
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 130, out + err
    assert "stopped waiting; the array goes on" in err
    assert "Slurm array job 4242 still running" in out


def test_reading_a_run_never_kills_what_a_dead_task_left_and_collect_does(tmp_path: Path) -> None:
    run_dir, env = _submitted_with_a_dead_task(tmp_path)
    # What the dead task left: its record says attempt 1 runs in a process group that still lives.
    left = subprocess.Popen(
        ["sleep", "300"], start_new_session=True, env={**os.environ, "NCUCAMPAIGN_RUN_DIR": str(run_dir)}
    )
    try:
        record = json.loads((run_dir / "manifest.json").read_text())
        target = record["targets"][0]
        target["status"] = "running"
        target["attempts"] = [{"number": 1, "started_at": "then", "status": "running", "process_group": left.pid}]
        (run_dir / "slurm" / "tasks" / "4242_0.json").write_text(json.dumps(record))
        before = (run_dir / "manifest.json").read_text()
        for command in (
            ["summarize", str(run_dir)],
            ["findings", str(run_dir)],
            ["compare", str(run_dir), str(run_dir)],
        ):
            (run_dir / "manifest.json").write_text(before)
            done = run_cli(*command, cwd=tmp_path, env=env)
            assert done.returncode in (0, 1), done.stdout + done.stderr
            assert left.poll() is None, f"{command[0]} killed a process"
            # ...nor rewrote the manifest, but it saw the task's record collected: the
            # target is reported as its dead task's
            assert (run_dir / "manifest.json").read_text() == before, f"{command[0]} rewrote the manifest"
            if command[0] == "summarize":
                assert "interrupted" in done.stdout and "its Slurm task" in done.stdout, done.stdout
        assert run_cli("collect", str(run_dir), cwd=tmp_path, env=env).returncode == 1
        assert left.wait(timeout=30) == -signal.SIGKILL
        attempt = json.loads((run_dir / "manifest.json").read_text())["targets"][0]["attempts"][0]
        assert "process(es) it left were killed" in attempt["message"]
    finally:
        if left.poll() is None:
            left.kill()


def test_an_end_of_options_marker_as_slurm_arg_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: k\n"))
    done = run_cli("plan", "camp.yaml", "--slurm", "--slurm-arg=--", cwd=tmp_path)
    assert done.returncode == 2 and "pass sbatch options" in done.stderr, done.stderr


@pytest.mark.parametrize("out", ["r\\x", "r\\%j"])
def test_a_slurm_run_directory_sbatch_cannot_name_is_refused_before_anything_is_created(
    tmp_path: Path, out: str
) -> None:
    # a backslash in --output turns Slurm's %A/%a off: every task would write one file; refused before anything
    # is made (control characters are refused by every path flag: tests/cli/test_control_characters_in_paths.py)
    _stand_ins(tmp_path / "bin")
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: k\n"))
    env = fake_env(PATH=f"{tmp_path / 'bin'}{os.pathsep}{fake_env()['PATH']}")
    for command in ("plan", "run"):
        done = run_cli(command, "camp.yaml", "--slurm", "--out", out, cwd=tmp_path, env=env)
        assert done.returncode == 2 and "cannot hold" in done.stderr and "choose another --out" in done.stderr, (
            done.stderr
        )
    assert not (tmp_path / out).exists()  # no ghost run directory


def sbatch_words(line: str) -> list[str]:
    """An `#SBATCH` line's values as sbatch reads them: blanks split, quotes group, a backslash takes the next
    character as it is, an unquoted # ends the line (docs/slurm.md, "Paths")."""
    words: list[str] = []
    word, quote, escaped, started = "", "", False, False
    for char in line.removeprefix("#SBATCH"):
        if escaped:
            word, escaped, started = word + char, False, True
        elif char == "\\":
            escaped = True
        elif quote:
            quote, word = ("", word) if char == quote else (quote, word + char)
        elif char in "'\"":
            quote, started = char, True
        elif char == "#":
            break
        elif char.isspace():
            if started:
                words.append(word)
            word, started = "", False
        else:
            word, started = word + char, True
    return [*words, word] if started else words


@pytest.mark.parametrize("out", ["r%j", "rq'x", 'r"x', "r#x", "r x", "a b%A 'c' \"d\" #e"])
def test_a_run_directory_with_blanks_quotes_hashes_and_percents_is_named_whole_in_the_batch_script(
    tmp_path: Path, out: str
) -> None:
    """Unquoted, `--out 'r x%A'` sent every task's output to `/.../r` (and `%A` to the job id); quoted for sbatch
    it reads back as the run directory, with %A and %a the only patterns."""
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: k\n"))
    done = run_cli("plan", "camp.yaml", "--slurm", "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    script = done.stdout.split("\n#!/bin/bash")[0]
    line = next(line for line in script.splitlines() if line.startswith("#SBATCH --output="))
    (value,) = sbatch_words(line)
    expected = f"{(tmp_path / out / 'camp' / 'plan').absolute()}/slurm/out/".replace("%", "%%")
    assert value == f"--output={expected}%A_%a.out"
    (tmp_path / "script.sh").write_text(script)
    assert subprocess.run(["bash", "-n", str(tmp_path / "script.sh")], capture_output=True).returncode == 0


def test_a_refused_sbatch_leaves_no_run_behind_and_latest_where_it_was(tmp_path: Path) -> None:
    _stand_ins(tmp_path / "bin")
    sbatch = tmp_path / "bin" / "sbatch"
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: k\n"))
    env = fake_env(PATH=f"{tmp_path / 'bin'}{os.pathsep}{fake_env()['PATH']}")
    first = run_cli("run", "camp.yaml", "--slurm", "--out", "runs", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    before = (tmp_path / "runs" / "camp" / "latest").resolve()
    sbatch.write_text("#!/bin/sh\necho 'sbatch: error: invalid partition specified: nope' >&2\nexit 1\n")
    done = run_cli(
        "run", "camp.yaml", "--slurm", "--slurm-arg=--partition=nope", "--out", "runs", cwd=tmp_path, env=env
    )
    assert done.returncode == 3 and "invalid partition specified: nope" in done.stderr, done.stderr
    assert "nothing was submitted and no run directory was kept" in done.stderr
    assert (tmp_path / "runs" / "camp" / "latest").resolve() == before  # latest not moved to the refused run
    assert sorted(p.name for p in (tmp_path / "runs" / "camp").iterdir() if not p.is_symlink()) == [before.name]


def test_a_refused_sbatch_on_resume_keeps_the_run_and_says_how_to_finish_it(tmp_path: Path) -> None:
    run_dir, env = _submitted_two_targets(tmp_path)
    sbatch = tmp_path / "bin" / "sbatch"
    sbatch.write_text("#!/bin/sh\necho 'sbatch: error: invalid partition specified: nope' >&2\nexit 1\n")
    refused = run_cli("run", "--resume", str(run_dir), "--slurm", cwd=tmp_path, env=env)
    assert refused.returncode == 3 and "invalid partition specified: nope" in refused.stderr, refused.stderr
    assert f"finish this run with: ncucampaign run --resume {run_dir} --slurm" in refused.stderr
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["state"] == "interrupted" and manifest["targets"][0]["status"] != "ok"
    sbatch.write_text("#!/bin/sh\necho 4243\n")  # the options mended
    resumed = run_cli("run", "--resume", str(run_dir), "--slurm", cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stderr
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["state"] == "submitted" and manifest["submissions"][-1]["job_id"] == "4243"
    assert "scancel -t PENDING 4243" in resumed.stdout  # pending tasks would start after -b -s INT alone


def test_waiting_prints_a_line_whenever_a_target_changes_state() -> None:
    from ncucampaign.commands.running.batch import progress_line
    from ncucampaign.execute.rundir.manifest import Manifest

    manifest = Manifest.model_construct(
        targets=[SimpleNamespace(status=Status(s)) for s in ("ok", "ok", "running", "pending", "no_kernels")],
        submissions=[SimpleNamespace(job_id="4242", backend="slurm")],
    )
    assert progress_line(manifest) == "waiting for Slurm array job 4242: 2 ok, 1 running, 1 pending, 1 no_kernels"


def test_hostile_22_8_a_task_that_died_before_claiming_is_reported_by_collect(tmp_path: Path) -> None:
    """No task claimed either target and the array is over: collect says so per target, with the last
    line its task printed, instead of a finished run of pending targets and no word why."""
    run_dir, env = _submitted_two_targets(tmp_path)
    tasks = json.loads((run_dir / "manifest.json").read_text())["submissions"][0]["tasks"]
    assert tasks == [["a"], ["b"]], tasks
    died = "ModuleNotFoundError: No module named 'ncucampaign'\x1b[2J"
    (run_dir / "slurm" / "out" / "4242_0.out").write_text(f"Traceback (most recent call last):\n{died}\n")
    collected = run_cli("collect", str(run_dir), cwd=tmp_path, env=env)
    assert collected.returncode == 1, collected.stdout + collected.stderr
    a, b = json.loads((run_dir / "manifest.json").read_text())["targets"]
    assert a["status"] == b["status"] == "interrupted", (a, b)
    assert a["message"].startswith("its Slurm task (job 4242, task 0) ended without claiming it; it printed: ")
    assert "No module named 'ncucampaign'\\x1b[2J" in a["message"]  # the escape written out, not sent
    assert "task 1) ended without claiming it; it left no output (slurm/out/4242_1.out)" in b["message"]
    assert "run --resume RUN_DIR --slurm reruns it" in b["message"]
    summary = run_cli("summarize", str(run_dir), cwd=tmp_path, env=env)
    assert "ended without claiming it" in summary.stdout and "\x1b" not in summary.stdout, summary.stdout


@pytest.mark.parametrize("arg", ["--time=2:00:00", "--ti=2:00:00", "-t2:00:00", "-Ht2:00:00"])
def test_a_time_limit_of_the_users_is_the_only_one_however_written(arg: str) -> None:
    script = batch_script(
        campaign="c", run_dir=Path("/r"), array=1, tasks=array_tasks([invocation("a")]), python="py", slurm_args=[arg]
    )
    lines = script.splitlines()
    assert f"#SBATCH {arg}" in lines
    assert not [line for line in lines if line.startswith("#SBATCH --time=") and line != f"#SBATCH {arg}"]
