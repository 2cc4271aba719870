"""report.html shows what a run recorded, never its control bytes (round 7, item 8): NVTX names and the application's
messages held 120 raw ESC and BEL bytes, which a terminal `cat`ing the page, or a log collector, acts on."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import campaign_text, load_manifest, run_cli

pytestmark = pytest.mark.slow

HOSTILE = "\x1b]0;pwned\x07\x1b[31mred\x1b[0m\x08\x7f\x9b"


def test_the_page_escapes_every_control_character_a_run_recorded(tmp_path: Path) -> None:
    (tmp_path / "camp.yaml").write_text(
        campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  kernel_name: nope\n")
    )
    assert run_cli("run", "camp.yaml", "--out", "runs", cwd=tmp_path).returncode == 1
    run, _ = load_manifest(tmp_path / "runs")
    data = json.loads((run / "manifest.json").read_text())
    for record in data["targets"]:
        record["message"] += HOSTILE
        record["diagnosis"] = [*record["diagnosis"], HOSTILE]
        for result in record["results"]:
            result["nvtx"] = [f"range{HOSTILE}", *result["nvtx"]]
            result["kernel"] += HOSTILE
            result["demangled"] += HOSTILE
    data["host"]["hostname"] += HOSTILE
    (run / "manifest.json").write_text(json.dumps(data))
    done = run_cli("report", str(run), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = (run / "report.html").read_text()
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", page), sorted(
        set(re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", page))
    )
    assert "\\x1b]0;pwned\\x07" in page or "\\u001b" in page  # shown, as escapes
