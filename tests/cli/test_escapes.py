"""Strings from outside (ncu's and the application's output) are inert wherever they are shown
: the live progress lines and notes on a terminal, doctor's table, compare's Markdown for a
CI job's page, and its JUnit XML. One helper per medium: ncucampaign/escaping.py."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ncucampaign.errors import printable
from ncucampaign.escaping import console_text, markdown_inline
from ncucampaign.results.gate.compare import Comparison
from ncucampaign.results.gate.report import junit_xml, markdown
from tests.conftest import FAKE_NCU_DIR, campaign_text, fake_env, run_cli

HOSTILE = (
    "<img src=x onerror=alert(1)>",
    "[l](javascript:alert(1))",
    "![i](https://example.com/t.png)",
    "ends in a backslash \\",
    "a | b",
    "``` fence",
    "**bold** _it_ <b>x</b> &amp;",
    "see www.example.com",
    "\x1b]0;APP2\x07Error: x \x1b[2J\u202e",
)


def without_code_spans(line: str) -> str:
    """What GitHub renders as Markdown (not literally) on a line: everything outside code spans."""
    return re.sub(r"(`+) .*? \1", "", line)


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_inline_shows_text_literally(text: str) -> None:
    shown = markdown_inline(text)
    outside = without_code_spans(shown)
    assert not re.search(r"[<>\[\]!*_\\`&]|www\.|://", outside), (text, shown)
    assert "\n" not in shown and "\x1b" not in shown
    assert re.sub(r"\\\|", "", shown).count("|") == 0  # a table cell ends where the table says


def test_plain_words_stay_plain_in_markdown() -> None:
    assert markdown_inline("gemm +50%: slower by 12% (p=0.01)") == "gemm +50%: slower by 12% (p=0.01)"


def test_compare_markdown_carries_no_markup_from_a_problem_message() -> None:
    """Before the fix: a target's problem message, from the application's output, was copied in raw."""
    comparison = Comparison(changes=(), only_in_a=(), only_in_b=(), notes=(), problems=HOSTILE)
    page = markdown(comparison)
    for line in page.splitlines():
        rendered = without_code_spans(line.removeprefix("### ").removeprefix("- problem: "))
        assert "<img" not in rendered and "](" not in rendered and "\x1b" not in rendered, line
    assert page.count("- problem: ") == len(HOSTILE)
    bold = page.splitlines()[2]  # the gate's line, bold: closed where it should be, whatever it quotes
    assert bold.startswith("**` gate: FAIL: ") and bold.endswith(" `**") and without_code_spans(bold) == "****"


def test_a_bar_is_escaped_in_table_cells_only() -> None:
    """Before the fix: problem lines outside tables wrote `a \\| b` inside their code span, where GitHub
    shows the backslash (it hides it in a table cell only)."""
    assert markdown_inline("x|y <z>") == "` x\\|y <z> `"
    assert markdown_inline("x|y <z>", cell=False) == "` x|y <z> `"
    comparison = Comparison(changes=(), only_in_a=(), only_in_b=(), notes=(), problems=("--metric a|b: <none>",))
    (line,) = [line for line in markdown(comparison).splitlines() if line.startswith("- problem: ")]
    assert line == "- problem: ` --metric a|b: <none> `"


def test_junit_stays_well_formed_with_hostile_problems() -> None:
    comparison = Comparison(changes=(), only_in_a=(), only_in_b=(), notes=(), problems=HOSTILE)
    suite = ET.fromstring(junit_xml(comparison))
    messages = [case.find("failure").get("message") for case in suite]
    assert messages == [printable(text) for text in HOSTILE]


def test_terminal_text_keeps_no_control_or_rich_markup() -> None:
    shown = console_text("\x1b]0;APP2\x07Error: [bold red]x[/] \u202e")
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "\\[bold red]" in shown


@pytest.mark.slow  # runs the CLI end to end
def test_live_progress_lines_carry_no_escape_from_the_application(tmp_path: Path) -> None:
    """Before the fix: an application printing `ESC]0;APP2 BEL Error: x` (a terminal title, then its error)
    reached the live progress line raw; so did an ncu ==ERROR== line holding `ESC[2J`."""
    app = tmp_path / "app.sh"
    app.write_text("#!/bin/sh\nprintf '\\033]0;APP2\\007Error: x\\n'\nexit 3\n")
    app.chmod(0o755)
    (tmp_path / "camp.yaml").write_text(
        campaign_text("- name: a\n  kernel_name: k\n").replace("  command: [", f"  command: [{str(app)!r}] #", 1)
    )
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env())
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Error: x" in done.stdout and "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout
    ncu = tmp_path / "bin" / "ncu"
    ncu.parent.mkdir()
    ncu.write_text(
        f'#!/bin/sh\ncase "$*" in *fake_app*) printf "==ERROR== \\033[2J boom\\n"; exit 1;; esac\n'
        f'exec {FAKE_NCU_DIR / "ncu"} "$@"\n'
    )
    ncu.chmod(0o755)
    (tmp_path / "camp.yaml").write_text(campaign_text("- name: a\n  kernel_name: k\n"))
    done = run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path, env=fake_env(NCUCAMPAIGN_NCU=str(ncu)))
    assert done.returncode == 1 and "boom" in done.stdout, done.stdout + done.stderr
    assert "\x1b" not in done.stdout + done.stderr


def test_the_closing_alone_lines_are_escaped_and_given_once_a_reason() -> None:
    """Before the fix: `  alone: <target>: <why>` carried raw escapes from ncu's error text, the
    application's names or a kept launches file, once for each target that shared the reason."""
    from ncucampaign.execute.rundir.manifest import Obtained
    from ncucampaign.results.sharing import sharing_breakdown
    from tests.manifests import manifest_with, target_record

    why = "the discovery trace shared/trace-1 ended app_failed: \x1b]0;pwned\x07 [bold]boom[/]"
    alone = [target_record(f"t{i}", obtained=Obtained(how="alone", reason=why)) for i in range(3)]
    decided = target_record("miss", obtained=Obtained(how="trace", reason="no kernels"))
    lines = sharing_breakdown(manifest_with([*alone, decided]))
    assert lines[1:] == [f"  alone: t0, t1, t2: {printable(why)}"]
    assert not any("\x1b" in line or "\x07" in line for line in lines)
