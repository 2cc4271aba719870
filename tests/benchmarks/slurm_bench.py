"""The Slurm benchmark (`python tests/benchmarks/bench.py slurm`): the scale benchmark's pool (scale.py: half
`rmsnorm_kernel`, half `regex:nvjet`, `launch_skip` 0..N/2) handed to the project's test Slurm
(tests/backends/slurm_cluster.py: one node, 4 fake GPUs) with `run FILE --slurm --wait`, on the fake ncu. Not a test:
it prints, per N, the wall seconds of the submission until `--wait` ends, our own seconds by phase (the submitter's
and each task's, from their records), the array tasks submitted, the most tasks running at once (squeue, sampled),
the peak memory of the submitter and of the largest task, and how the targets ended. Where no Slurm can be brought
up here (not root, no packages), it says why and measures nothing.

    python tests/benchmarks/bench.py slurm --sizes 400 1000 10000
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.backends import slurm_cluster  # noqa: E402
from tests.benchmarks.scale import FAKE, _main_peak_mb, campaign  # noqa: E402
from tests.execute.rundir_check import problems  # noqa: E402


@dataclass
class SlurmMeasured:
    n: int
    wall_s: float = 0.0
    exit_code: int | None = None
    tasks: int = 0
    most_running: int = 0
    submitter_mb: float = 0.0
    task_mb: float = 0.0
    submitter_own: dict[str, float] = field(default_factory=dict)
    tasks_own: dict[str, float] = field(default_factory=dict)
    statuses: Counter[str] = field(default_factory=Counter)
    finished: bool = True
    tail: str = ""
    problems: list[str] = field(default_factory=list)  # tests/execute/rundir_check.py's, of the run directory
    identity: str = "not compared"  # against a local shared run of the same campaign, per target

    def row(self) -> str:
        if not self.finished:
            return f"{self.n:>6} not finished in {self.wall_s:.0f} s (stopped)\n{self.tail}"

        def phases(own: dict[str, float]) -> str:
            shown = sorted(own.items(), key=lambda kv: -kv[1])
            return ", ".join(f"{k} {v:.1f}" for k, v in shown if v >= 0.05) or "-"

        ok = self.statuses.get("ok", 0)
        own = sum(self.submitter_own.values()) + sum(self.tasks_own.values())
        return (
            f"{self.n:>6} wall {self.wall_s:7.1f} s  own {own:6.1f} s  array tasks {self.tasks:>4}  "
            f"running at once (most) {self.most_running}  ok {ok}/{self.n}  exit {self.exit_code}\n"
            f"{'':7}run directory: {'; '.join(self.problems[:3]) or 'every target ok once, as recorded'}; "
            f"launch identity with a local run: {self.identity}\n"
            f"{'':7}peak: submitter {self.submitter_mb:5.0f} MB, largest task {self.task_mb:5.0f} MB\n"
            f"{'':7}own seconds, submitter: {phases(self.submitter_own)}\n"
            f"{'':7}own seconds, tasks (summed): {phases(self.tasks_own)}"
        )


def _running_tasks() -> int:
    done = subprocess.run(["squeue", "-h", "-t", "R", "-o", "%i"], capture_output=True, text=True, timeout=60)
    return len(done.stdout.split()) if done.returncode == 0 else 0


def _task_peaks() -> list[float]:
    """The VmHWM of every slurm-task runner alive now."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except OSError:
            continue
        if b"slurm-task" in command and b"ncucampaign" in command:
            found.append(_main_peak_mb(int(entry)))
    return found


def measure(n: int, limit_s: float) -> SlurmMeasured:
    measured = SlurmMeasured(n)
    with tempfile.TemporaryDirectory(prefix=f"ncuc-slurm-{n}-") as work:
        folder = Path(work)
        os.chmod(folder, 0o755)
        (folder / "scale.yaml").write_text(campaign(n))
        env = {
            **os.environ,
            "PATH": f"{FAKE}{os.pathsep}{os.environ.get('PATH', '')}",
            "FAKE_NCU_REPORTS": str(ROOT / "tests" / "fixtures" / "reports"),
            "FAKE_NCU_STATE": str(folder / "fake-state"),
            "PYTHONPATH": str(ROOT),
            "XDG_CACHE_HOME": str(folder / "cache"),
        }
        env.pop("NCUCAMPAIGN_NSYS", None)
        args = [sys.executable, "-m", "ncucampaign", "run", "scale.yaml", "--slurm", "--wait", "--out", "runs"]
        started = time.perf_counter()
        with open(folder / "out.log", "w") as out:
            child = subprocess.Popen(args, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.5):
                measured.most_running = max(measured.most_running, _running_tasks())
                measured.submitter_mb = max(measured.submitter_mb, _main_peak_mb(child.pid))
                measured.task_mb = max([measured.task_mb, *_task_peaks()])

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            measured.exit_code = child.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            subprocess.run(["scancel", "--user=root"], capture_output=True, timeout=60)
            measured.finished = False
        measured.wall_s = time.perf_counter() - started
        done.set()
        sampler.join()
        measured.tail = "\n".join((folder / "out.log").read_text(errors="replace").splitlines()[-15:])
        if not measured.finished:
            return measured
        run_dir = (folder / "runs" / "scale" / "latest").resolve()
        manifest = json.loads((run_dir / "manifest.json").read_text())
        measured.submitter_own = manifest.get("own_seconds") or {}
        measured.tasks = sum(len(s["tasks"]) for s in manifest.get("submissions", []))
        measured.statuses.update(t["status"] for t in manifest["targets"])
        for record in sorted((run_dir / "slurm" / "tasks").glob("*.json")):
            for phase, seconds in (json.loads(record.read_text()).get("own_seconds") or {}).items():
                measured.tasks_own[phase] = measured.tasks_own.get(phase, 0.0) + seconds
        measured.problems = problems(run_dir)
        _wait_empty()
        if n <= IDENTITY_UP_TO:
            measured.identity = _identity(folder, env, manifest)
    return measured


IDENTITY_UP_TO = 1000  # a local run of the same campaign, to compare each target's launches (10,000: minutes more)


def _identity(folder: Path, env: dict[str, str], slurm: dict[str, object]) -> str:
    """Whether each target profiled the same launches (ordinal, kernel, grid, block) as a local shared run."""
    from tests.benchmarks.bench import identities

    args = [sys.executable, "-m", "ncucampaign", "run", "scale.yaml", "--out", "local"]
    done = subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return f"the local run ended {done.returncode}"
    local = json.loads(((folder / "local" / "scale" / "latest").resolve() / "manifest.json").read_text())
    here, there = identities(local), identities(slurm)
    same = sum(1 for name, launches in here.items() if [x[:4] for x in launches] == [x[:4] for x in there[name]])
    return f"{same}/{len(here)} the same"


def _wait_empty() -> None:
    end = time.monotonic() + 120
    while time.monotonic() < end and subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout.strip():
        time.sleep(0.5)


def bench_slurm(sizes: list[int], limit_s: float) -> list[SlurmMeasured]:
    why = slurm_cluster.why_not()
    if why is not None:
        print(f"slurm: skipped: {why}")
        return []
    rows = []
    with slurm_cluster.cluster():
        for n in sizes:
            measured = measure(n, limit_s)
            rows.append(measured)
            print(measured.row(), flush=True)
    return rows
