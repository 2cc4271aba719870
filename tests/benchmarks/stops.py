"""Stopping a long run at any moment (`python tests/benchmarks/bench.py stops`): the scale benchmark's pool of N
targets (scale.py) run on the fake ncu and stopped at `count` moments spread over its whole life (planning, the
trace, each union, the read-outs, the records), alternately with SIGINT and SIGTERM (and SIGHUP with --hup); then,
each stopped run resumed to its end. Not a test: it prints, per stop, when it came, the exit code, the seconds from
the signal to the end, whether the closing lines (the tally, the resume command) were printed, and after the
resume whether every target is ok exactly once with the manifest agreeing with the run directory
(tests/execute/rundir_check.py); then the counts. With --kill, SIGKILL instead, and only the resumes are judged.

    python tests/benchmarks/bench.py stops --targets 1000 --stops 50
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.scale import FAKE, campaign  # noqa: E402
from tests.execute.rundir_check import problems  # noqa: E402

TALLY = " targets: "  # '1000 targets: 12 ok, 988 interrupted'


@dataclass
class Stopped:
    at: float
    signal: str
    code: int | None
    took: float
    tally: bool
    resume_hint: bool
    before: bool = False  # it came before the run directory: nothing was recorded, nothing to tally
    resumed: int | None = None
    found: list[str] | None = None

    @property
    def during(self) -> bool:
        """It came while the run ran (not before its run directory, nor after it ended: exit 0)."""
        return not self.before and self.code != 0

    def row(self) -> str:
        said = ("tally" if self.tally else "NO TALLY") + (", resume command" if self.resume_hint else "")
        said = "before the run began: nothing recorded" if self.before else said
        said = "after the run had ended" if self.code == 0 else said
        after = f"resume exit {self.resumed}, " + ("nothing lost" if not self.found else f"{self.found[:2]}")
        return f"{self.at:6.2f} s {self.signal:8} exit {self.code}  in {self.took:4.2f} s  {said}; {after}"


def environment(folder: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PATH": f"{FAKE}{os.pathsep}{os.environ.get('PATH', '')}",
        "FAKE_NCU_REPORTS": str(ROOT / "tests" / "fixtures" / "reports"),
        "FAKE_NCU_STATE": str(folder / "fake-state"),
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(folder / "cache"),
    }
    env.pop("NCUCAMPAIGN_NSYS", None)
    return env


def whole_run_seconds(n: int) -> float:
    with tempfile.TemporaryDirectory(prefix=f"ncuc-stops-{n}-") as work:
        folder = Path(work)
        (folder / "scale.yaml").write_text(campaign(n))
        started = time.monotonic()
        args = [sys.executable, "-m", "ncucampaign", "run", "scale.yaml", "--out", "runs"]
        subprocess.run(args, cwd=folder, env=environment(folder), capture_output=True)
        return time.monotonic() - started


def stop_once(n: int, at: float, sig: signal.Signals) -> Stopped:
    with tempfile.TemporaryDirectory(prefix=f"ncuc-stops-{n}-") as work:
        folder = Path(work)
        (folder / "scale.yaml").write_text(campaign(n))
        env = environment(folder)
        args = [sys.executable, "-m", "ncucampaign", "run", "scale.yaml", "--out", "runs"]
        run = subprocess.Popen(args, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        started = time.monotonic()
        time.sleep(at)
        sent = time.monotonic()
        run.send_signal(sig)
        out, _ = run.communicate()
        took = time.monotonic() - sent
        stopped = Stopped(at, sig.name, run.returncode, took, TALLY in out, "--resume" in out)
        latest = folder / "runs" / "scale" / "latest"
        stopped.before = not latest.is_dir()  # no run directory: nothing was recorded, nothing to tally
        if latest.is_dir() and '"state": "finished"' in (latest / "manifest.json").read_text()[:4096]:
            stopped.resume_hint = True  # every target had ended: there is nothing to resume
        if sig == signal.SIGKILL:
            stopped.tally = stopped.resume_hint = True  # a kill says nothing: only the resume is judged
        begun = (folder / "runs" / "scale" / "latest").is_dir()
        again = [*args, "--resume"] if begun else args
        resumed = subprocess.run(again, cwd=folder, env=env, capture_output=True, text=True)
        stopped.resumed = resumed.returncode
        run_dir = (folder / "runs" / "scale" / "latest").resolve()
        stopped.found = problems(run_dir) if run_dir.is_dir() else ["no run directory"]
        del started
        return stopped


def bench_stops(n: int, count: int, kill: bool = False, hup: bool = False) -> list[Stopped]:
    whole = whole_run_seconds(n)
    print(f"{n} targets: a whole run takes {whole:.1f} s; {count} stops spread over it", flush=True)
    kinds = [signal.SIGKILL] if kill else [signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hup else [])]
    rows = []
    for number in range(count):
        at = whole * (number + 0.5) / count
        row = stop_once(n, at, kinds[number % len(kinds)])
        rows.append(row)
        print(row.row(), flush=True)
    graceful = [r for r in rows if r.signal != "SIGKILL" and r.during]
    clean = [r for r in graceful if r.code == 130 and r.took <= 2 and r.tally and r.resume_hint]
    early = [r for r in rows if r.signal != "SIGKILL" and r.before]
    if early:
        print(f"{len(early)} came before the run directory: {sum(r.code == 130 for r in early)} ended 130")
    whole_after = [r for r in rows if r.resumed in (0,) and not r.found]
    if graceful:
        print(f"{len(clean)} of {len(graceful)} stops while the run ran ended 130 within 2 s, tally and resume command")
    print(f"{len(whole_after)} of {len(rows)} resumes ended with every target ok exactly once, as recorded")
    return rows
