"""The live display on a terminal: per-lane lines while running, a line per finished target."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from ncucampaign.commands.parts.progress import ConsoleReporter, final_table, finished_line
from ncucampaign.execute.rundir.manifest import TargetRecord
from ncucampaign.execute.rundir.status import Status
from ncucampaign.execute.rundir.store import RunDir
from ncucampaign.plan.expand import build_plan
from ncucampaign.spec.loader import parse_campaign
from tests.manifests import manifest_with, target_record


def record(name: str, status: Status, gpus: list[str] | None = None) -> TargetRecord:
    return target_record(name, status, message="why", gpus=gpus)


def test_live_display_on_a_terminal() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    plan = build_plan(
        parse_campaign("application:\n  command: x\ntargets:\n  - name: a\n  - name: b\n", Path("c.yaml"))
    )
    with ConsoleReporter(console) as reporter:
        assert reporter.live
        reporter.started(RunDir(Path("/r"), "1"), plan)
        reporter.attempt_started(plan.invocations[0], 1, 1, "GPU 0")
        reporter.attempt_started(plan.invocations[1], 2, 3, "GPU 1")
        assert set(reporter.lanes) == {"GPU 0", "GPU 1"}
        reporter.target_finished(1, 2, record("a", Status.OK, ["0"]))
    text = out.getvalue()
    assert "[1/2] ok" in text and "a [GPU 0]" in text


def test_final_table_and_lines() -> None:
    manifest = manifest_with([record("a", Status.OK), record("b", Status.NO_KERNELS)])
    out = io.StringIO()
    Console(file=out, width=200).print(final_table(manifest, "/runs/c/1"))
    assert "no_kernels" in out.getvalue() and "attempts" in out.getvalue()
    assert finished_line(2, 2, record("b", Status.NO_KERNELS)).startswith("[2/2] no_kernels     b  kernels -")


def test_piped_output_is_not_wrapped_at_80_columns_on_stdout_or_stderr(capsys) -> None:
    """Before the fix: rich wrapped prose at 80 columns when piped (stderr had rich's own default)."""
    from ncucampaign.commands.parts.consoles import out_console

    line = "ncucampaign: stopping: asking ncu to finish and write its report " + "x" * 120
    for stderr in (False, True):
        out_console(stderr=stderr).print(line)
    captured = capsys.readouterr()
    assert captured.out == line + "\n" and captured.err == line + "\n"


def test_every_command_of_the_help_has_its_text_on_its_own_line() -> None:
    """Before the fix: `summarize` and `reference` stood alone on a line, their text on the next."""
    import argparse

    from ncucampaign.cli import build_parser

    parser = build_parser([])
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert {"run", "slurm-task", "k8s-task"} <= set(commands.choices)  # every command module's, tasks too
    shown = parser.format_help().splitlines()
    for command in commands.choices:
        (line,) = [line for line in shown if line.strip().split(" ")[0] == command]
        assert len(line.split()) > 1, line
