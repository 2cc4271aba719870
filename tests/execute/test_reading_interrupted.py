"""A Ctrl-C while a report is read: the report is fine, so the target is `interrupted` with
its report kept, never `profiler_error` as if the reader had crashed on a damaged report; and the
reader worker itself does not die of the terminal's SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ncucampaign.backends.local import start_run
from ncucampaign.errors import ReportUnreadable
from ncucampaign.execute.attempt.classify import ConsoleSummary
from ncucampaign.execute.prepare import RunSettings
from ncucampaign.execute.process.signals import StopRequest
from ncucampaign.execute.rundir.status import Status
from ncucampaign.plan.expand import build_plan
from ncucampaign.spec.loader import load_campaign
from tests.conftest import FAKE_NCU_DIR, FIXTURES, ROOT, campaign_text


class StoppedWhileReading:
    """A reader interrupted the way a Ctrl-C interrupts one: the stop arrives, the read fails."""

    def __init__(self, stop: StopRequest) -> None:
        self.stop = stop

    def warm(self) -> None:
        pass

    def read(self, report: Path, wanted: tuple[str, ...], console: ConsoleSummary) -> None:
        self.stop.request(1)
        raise ReportUnreadable(f"{report}: corrupt or truncated report (the report reader crashed on it: signal 2)")


@pytest.mark.slow
def test_a_stop_while_the_report_is_read_is_interrupted_with_the_report_kept(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", f"{FAKE_NCU_DIR}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_REPORTS", str(FIXTURES / "reports"))
    campaign = tmp_path / "camp.yaml"
    campaign.write_text(
        campaign_text("- name: a\n  kernel_name: rmsnorm_kernel\n- name: b\n  kernel_name: regex:nvjet\n")
    )
    loaded = load_campaign(campaign)
    plan = build_plan(loaded)
    stop = StopRequest()
    settings = RunSettings(
        runs_root=tmp_path / "runs", ncu_path=str(FAKE_NCU_DIR / "ncu"), reader=StoppedWhileReading(stop), share=False
    )

    class Quiet:
        def __getattr__(self, _name: str):
            return lambda *args, **kwargs: None

    result = start_run(loaded, plan, settings, Quiet(), stop).execute()
    first, second = result.manifest.targets
    assert first.status == Status.INTERRUPTED, first.message
    assert first.message.startswith("interrupted while its report was read; the report is kept")
    assert (result.run.root / "reports" / "a.ncu-rep").is_file()
    assert second.status == Status.PENDING  # nothing more started


@pytest.mark.slow  # over 0.4 s on the 2-core machine (a process of its own, mostly): not in the inner loop
def test_the_reader_worker_outlives_a_ctrl_c(tmp_path: Path) -> None:
    """The worker blocks opening a FIFO (a state it waits in); SIGINT then, as a terminal sends it to the
    whole group: it must not die of it (as it did, reporting the report as damaged)."""
    fifo = tmp_path / "report.ncu-rep"
    os.mkfifo(fifo)
    request = json.dumps({"op": "launches", "report": str(fifo), "ncu": None})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    worker = subprocess.Popen(
        [sys.executable, "-m", "ncucampaign.results.reading.reader_worker"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert worker.stdin is not None
    worker.stdin.write(request + "\n")  # one request a line; it serves until its stdin ends
    worker.stdin.flush()
    status, guard = Path(f"/proc/{worker.pid}/status"), time.monotonic() + 30
    while True:  # wait for the observable state: SIGINT (bit 1 of SigIgn) ignored, before the read
        ignored = next((line for line in status.read_text().splitlines() if line.startswith("SigIgn:")), "0 0")
        if int(ignored.split()[1], 16) & (1 << (signal.SIGINT - 1)):
            break
        assert worker.poll() is None, "the worker ended before it read anything"
        if time.monotonic() > guard:  # it never ignores SIGINT: a Ctrl-C would kill it mid-read
            worker.kill()
            pytest.fail("the reader worker does not ignore SIGINT")
    worker.send_signal(signal.SIGINT)
    with open(fifo, "wb") as writer:  # unblocks it: it reads this and answers
        writer.write(b"not a report\n")
    worker.stdin.close()
    out = worker.stdout.read() if worker.stdout else ""
    worker.wait(timeout=60)
    assert worker.returncode == 0, worker.returncode
    assert "error" in json.loads(out) or "ok" in json.loads(out)
