"""One frozen run request (issue 42): built from run's command line once, by ab without an argv, and
read by every step of run; commands/run.py stays a short pipeline over it."""

from __future__ import annotations

import ast
import dataclasses

import pytest

from ncucampaign.cli import build_parser
from ncucampaign.commands.run_request import KubernetesFlags, RunRequest
from tests.conftest import ROOT


def request_of(*words: str) -> RunRequest:
    args = build_parser(["run", *words]).parse_args(["run", *words])
    return RunRequest.from_args(args)


def test_the_command_line_becomes_one_frozen_request() -> None:
    request = request_of(
        "camp.yaml", "--rerun-failed", "--only", "a", "b", "--slurm", "--slurm-arg=--", "--slurm-arg=-p gpu"
    )
    assert request.resume == "latest" and request.rerun_failed  # --rerun-failed implies --resume
    assert request.only == ("a", "b") and request.slurm_args == ("--", "-p gpu")
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.samples = 3  # type: ignore[misc]
    k8s = request_of("camp.yaml", "--k8s", "--k8s-toleration", "g:NoSchedule", "--k8s-volume", "c:/runs")
    assert k8s.k8s_flags == KubernetesFlags(volume="c:/runs", tolerations=("g:NoSchedule",)) and k8s.k8s_flags.given
    assert not request_of("camp.yaml").k8s_flags.given


def test_the_ncu_asked_for_is_the_flag_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NCUCAMPAIGN_NCU", "/opt/ncu")
    assert RunRequest().ncu == "/opt/ncu" and RunRequest(ncu_flag="ncu-2026").ncu == "ncu-2026"


def test_no_command_module_parses_an_argv_of_its_own() -> None:
    """ab ran `run` by building an argv and parsing it again; only the run's recorded command line
    (run_resume.keep_own_flags: what an earlier run was started with) is read that way."""
    parsing = []
    for path in sorted((ROOT / "ncucampaign" / "commands").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("parse_args", "parse_known_args"):
                parsing.append(path.name)
    assert parsing == ["run_resume.py"]
    assert len((ROOT / "ncucampaign" / "commands" / "run.py").read_text().splitlines()) <= 150
