"""One frozen run request: built from run's command line once, by ab without an argv, read by every step
of run, recorded in the manifest and read back from there by --resume (which parses no command line);
its backend named once, looked up in the one table of backends, which commands/run.py never names."""

from __future__ import annotations

import ast
import builtins
import io
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ncucampaign.backends.systems import BACKENDS
from ncucampaign.cli import TASKS, build_parser
from ncucampaign.commands.running.request import ncu_of, request_from
from ncucampaign.errors import UsageError
from ncucampaign.execute.rundir.request import BackendRequest, RunRequest
from ncucampaign.execute.rundir.task_list import TaskList
from tests.conftest import ROOT, campaign_text, fake_env, load_manifest, run_cli_here


def request_of(*words: str) -> RunRequest:
    args = build_parser(["run", *words]).parse_args(["run", *words])
    return request_from(args)


def test_the_command_line_becomes_one_frozen_request_that_names_its_backend_once() -> None:
    request = request_of(
        "camp.yaml", "--rerun-failed", "--only", "a", "b", "--slurm", "--slurm-arg=--", "--slurm-arg=-p gpu"
    )
    assert request.resume == "latest" and request.rerun_failed  # --rerun-failed implies --resume
    assert request.only == ("a", "b")
    assert request.backend == BackendRequest(name="slurm", options={"--slurm-arg": ("--", "-p gpu")})
    with pytest.raises(ValidationError):
        request.samples = 3  # type: ignore[misc]
    k8s = request_of("camp.yaml", "--k8s", "--k8s-toleration", "g:NoSchedule", "--k8s-volume", "c:/runs", "--wait")
    assert k8s.backend == BackendRequest(
        name="kubernetes", wait=True, options={"--k8s-toleration": ("g:NoSchedule",), "--k8s-volume": ("c:/runs",)}
    )
    assert request_of("camp.yaml").backend == BackendRequest()
    backends = [name for name, field in RunRequest.model_fields.items() if field.annotation in (BackendRequest,)]
    assert backends == ["backend"] and not {"slurm", "k8s", "slurm_args", "k8s_flags"} & set(RunRequest.model_fields)


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (("--slurm-arg=-p gpu",), "--slurm-arg goes with --slurm"),
        (("--k8s-image", "i", "--k8s-queue", "q"), "--k8s-image, --k8s-queue go with --k8s"),
        (("--slurm", "--k8s"), "--slurm and --k8s: choose one"),
        (("--wait",), "--wait goes with --slurm or --k8s"),
    ],
)
def test_options_of_a_backend_not_chosen_are_a_usage_error(words: tuple[str, ...], said: str) -> None:
    with pytest.raises(UsageError, match=said):
        request_of("camp.yaml", *words)


def test_the_ncu_asked_for_is_the_flag_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NCUCAMPAIGN_NCU", "/opt/ncu")
    assert ncu_of(RunRequest()) == "/opt/ncu" and ncu_of(RunRequest(ncu_flag="ncu-2026")) == "ncu-2026"


def test_no_command_module_parses_an_argv_of_its_own_and_run_names_no_backend() -> None:
    """ab ran `run` by building an argv and parsing it again, and --resume parsed the recorded command
    line; commands/run.py named Kubernetes and Slurm."""
    parsing = []
    for path in sorted((ROOT / "ncucampaign" / "commands").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            called = node.func if isinstance(node, ast.Call) else None
            if isinstance(called, ast.Attribute) and called.attr in (
                "parse_args",
                "parse_known_args",
                "ArgumentParser",
            ):
                parsing.append(path.name)
    assert parsing == []
    text = (ROOT / "ncucampaign" / "commands" / "run.py").read_text()
    assert len(text.splitlines()) <= 150
    assert [word for word in ("slurm", "k8s", "kubernetes") if word in text.lower()] == []
    assert list(BACKENDS) == ["here", "slurm", "kubernetes"]


def test_a_resume_reads_the_manifest_once_and_keeps_the_request_the_run_was_started_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: no_such_kernel\n"))  # no_kernels
    env = fake_env()
    first = run_cli_here("run", "camp.yaml", "--out", "runs", "--no-share", "--samples", "2", cwd=tmp_path, env=env)
    assert first.returncode == 1, first.stdout + first.stderr
    run_dir, manifest = load_manifest(tmp_path / "runs")
    assert manifest["request"]["no_share"] is True and manifest["request"]["samples"] == 2
    reads: list[str] = []
    opened = builtins.open

    def counting(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if str(file).endswith("manifest.json") and "r" in mode and "+" not in mode:
            reads.append(str(file))
        return opened(file, mode, *args, **kwargs)

    os_open = os.open

    def counting_os(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith("manifest.json") and not flags & (os.O_WRONLY | os.O_RDWR):
            reads.append(str(path))
        return os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting)
    monkeypatch.setattr(io, "open", counting)
    monkeypatch.setattr(os, "open", counting_os)
    resumed = run_cli_here("run", "--resume", str(run_dir), cwd=tmp_path, env=fake_env())
    monkeypatch.undo()
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert reads == [str(run_dir / "manifest.json")]
    _, again = load_manifest(tmp_path / "runs")
    assert again["request"]["no_share"] is True and again["request"]["samples"] == 2  # kept, as recorded
    assert len(again["resumed"]) == 1 and [len(t["attempts"]) for t in again["targets"]] == [2]


def test_each_batch_backends_task_command_comes_from_the_table_and_no_command_module_names_a_backend() -> None:
    """slurm-task and k8s-task were two command modules that each imported their backend's own modules."""
    from ncucampaign.backends.systems import BATCH
    from ncucampaign.cli import RUNS, commands_for

    commands = ROOT / "ncucampaign" / "commands"
    naming = [
        p.name for p in commands.rglob("*.py") if "backends.slurm" in p.read_text() or "backends.k8s" in p.read_text()
    ]
    assert naming == []
    parser = build_parser(["slurm-task"])
    for backend in BATCH.values():
        name = backend.words.task_command
        assert commands_for([name, "RUN", "--array", "1"]) == (TASKS,)  # its start imports that command alone
        parsed = parser.parse_args(
            [name, "RUN", "--array", "3", *(["--index", "2"] if backend.words.task_index_help else [])]
        )
        assert getattr(parsed, RUNS).args == (backend,) and parsed.array == 3
    assert "here" not in BATCH and {"here": BACKENDS["here"], **BATCH} == BACKENDS  # a run here has no tasks
    with pytest.raises(UsageError, match="needs --index"):
        BATCH["slurm"].task_index(TaskList(tasks=[["a"]]), 1, None)
    with pytest.raises(UsageError, match="is not a Kubernetes Job"):
        BATCH["kubernetes"].task_index(TaskList(tasks=[["a"]], backend="slurm"), 1, None)
