"""The scale benchmark (`python tests/benchmarks/bench.py scale`): one shared pool of N targets on the fake ncu,
half `rmsnorm_kernel` and half `regex:nvjet`, `launch_skip` 0..N/2, as discover's suggestions for a whole model
or a matrix grow them. Not a test: it prints, per N, wall seconds, CPU seconds (the whole process tree), the peak
memory of ncucampaign's own process, of its report readers and of the fake ncu's processes (sampled), of the largest
process and of the tree together, the run's own seconds by phase (the manifest's
`own_seconds`), ncu processes started, and whether every target ended ok.

    python tests/benchmarks/bench.py scale --sizes 20 200 1000 10000
    python tests/benchmarks/bench.py scale --sizes 20 200 --code /tmp/base --limit 600   # another checkout, the same fake

`--code` runs another checkout's ncucampaign (a `git worktree` of an older commit) against this checkout's fake
ncu, each N back to back with this one; a run past `--limit` seconds is stopped and reported unfinished.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "fake_ncu"
SPLIT_MESSAGES = ("split out of", "read out of")  # a target's attempts that started no application


def campaign(n: int) -> str:
    """N targets in one pool: the fake application launches 4 rmsnorm and 2 nvjet a step (and one each before)."""
    half = n // 2
    steps = half // 2 + 2
    rms = ", ".join(str(i) for i in range(n - half))
    gemm = ", ".join(str(i) for i in range(half))
    return (
        f"version: 1\nname: scale\napplication:\n  command: python3 {FAKE / 'fake_app.py'} --steps {steps}\n"
        "defaults:\n  sections: [SpeedOfLight]\n  launch_count: 1\n  retries: 0\ntargets:\n"
        f"  - name: rms_{{launch_skip}}\n    kernel_name: rmsnorm_kernel\n    matrix:\n      launch_skip: [{rms}]\n"
        f"  - name: gemm_{{launch_skip}}\n    kernel_name: regex:nvjet\n    matrix:\n      launch_skip: [{gemm}]\n"
    )


@dataclass
class Measured:
    n: int
    code: str
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_process_mb: float = 0.0
    peak_tree_mb: float = 0.0
    peak_main_mb: float = 0.0  # ncucampaign's own process (sampled VmHWM)
    peak_reader_mb: float = 0.0  # its report readers (sampled)
    peak_ncu_mb: float = 0.0  # the fake ncu's processes (sampled): the stand-in's, not the tool's
    exit_code: int | None = None
    own: dict[str, float] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    ncu_starts: int = 0
    app_starts: int = 0
    finished: bool = True

    def row(self) -> str:
        if not self.finished:
            return f"{self.n:>6} {self.code:8} not finished in {self.wall_s:.0f} s (stopped)"
        own = sum(self.own.values())
        phases = ", ".join(f"{k} {v:.1f}" for k, v in sorted(self.own.items(), key=lambda kv: -kv[1]) if v >= 0.05)
        ok = self.statuses.get("ok", 0)
        return (
            f"{self.n:>6} {self.code:8} wall {self.wall_s:7.1f} s  CPU {self.cpu_s:7.1f} s  "
            f"peak: ncucampaign {self.peak_main_mb:5.0f} MB, its readers {self.peak_reader_mb:4.0f} MB, the fake ncu "
            f"{self.peak_ncu_mb:4.0f} MB (largest process {self.peak_process_mb:5.0f} MB, tree {self.peak_tree_mb:5.0f} "
            f"MB)\n{'':16}own {own:6.1f} s  "
            f"ncu starts {self.ncu_starts:>6} (application {self.app_starts})  ok {ok}/{self.n}  exit {self.exit_code}\n"
            f"{'':16}own seconds: {phases}"
        )


def _tree(root: int) -> dict[int, tuple[float, str]]:
    """`root` and every descendant: resident MB and command line, from /proc."""
    parents: dict[int, int] = {}
    found: dict[int, tuple[float, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        found[int(entry)] = (int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20, command)
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        children = [child for child, parent in parents.items() if parent == pid and child not in tree]
        tree.update(children)
        frontier.extend(children)
    return {pid: found[pid] for pid in tree if pid in found}


def _main_peak_mb(pid: int) -> float:
    """The process's own high-water mark of resident memory (VmHWM)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            line = next(line for line in status if line.startswith("VmHWM:"))
        return int(line.split()[1]) / 1024
    except (OSError, StopIteration, ValueError):
        return 0.0


def measure(n: int, code: Path, label: str, limit_s: float, keep: Path | None = None) -> Measured:
    measured = Measured(n, label)
    with tempfile.TemporaryDirectory(prefix=f"ncuc-scale-{n}-") as work:
        folder = Path(work)
        (folder / "scale.yaml").write_text(campaign(n))
        timeline = folder / "ncu-starts.log"
        env = {
            **os.environ,
            "PATH": f"{FAKE}{os.pathsep}{os.environ.get('PATH', '')}",
            "FAKE_NCU_REPORTS": str(ROOT / "tests" / "fixtures" / "reports"),
            "FAKE_NCU_STATE": str(folder / "fake-state"),
            "FAKE_NCU_TIMELINE": str(timeline),
            "PYTHONPATH": str(code),
            "XDG_CACHE_HOME": str(folder / "cache"),
        }
        env.pop("NCUCAMPAIGN_NSYS", None)
        args = [sys.executable, "-m", "ncucampaign", "run", "scale.yaml", "--out", "runs"]
        started = time.perf_counter()
        with open(folder / "out.log", "w") as out:
            child = subprocess.Popen(args, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)
        done = threading.Event()
        peak = {"tree": 0.0, "main": 0.0, "readers": 0.0, "ncu": 0.0}

        def sample() -> None:
            while not done.wait(0.25):
                tree = _tree(child.pid)
                peak["tree"] = max(peak["tree"], sum(mb for mb, _ in tree.values()))
                peak["main"] = max(peak["main"], _main_peak_mb(child.pid))
                for mb, command in tree.values():
                    kind = "readers" if "reader_worker" in command else "ncu" if "fake_ncu/ncu" in command else None
                    if kind:
                        peak[kind] = max(peak[kind], mb)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        timer = threading.Timer(limit_s, lambda: os.kill(child.pid, signal.SIGKILL))
        timer.start()
        _, status, usage = os.wait4(child.pid, 0)
        timer.cancel()
        done.set()
        sampler.join()
        child.returncode = os.waitstatus_to_exitcode(status)
        measured.wall_s = time.perf_counter() - started
        measured.cpu_s = usage.ru_utime + usage.ru_stime
        measured.peak_process_mb = usage.ru_maxrss / 1024
        measured.peak_tree_mb = peak["tree"]
        measured.peak_main_mb, measured.peak_reader_mb, measured.peak_ncu_mb = (
            peak["main"],
            peak["readers"],
            peak["ncu"],
        )
        measured.exit_code = child.returncode
        if child.returncode == -signal.SIGKILL:
            measured.finished = False
            return measured
        manifest = json.loads(next((folder / "runs" / "scale").glob("2*/manifest.json")).read_text())
        measured.own = manifest.get("own_seconds") or {}
        for record in manifest["targets"]:
            measured.statuses[record["status"]] = measured.statuses.get(record["status"], 0) + 1
        measured.app_starts = sum(len(run["attempts"]) for run in manifest.get("shared_runs", [])) + sum(
            1 for t in manifest["targets"] for a in t["attempts"] if not a["message"].startswith(SPLIT_MESSAGES)
        )
        if timeline.is_file():
            measured.ncu_starts = sum(1 for line in timeline.read_text().splitlines() if line.startswith("start"))
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"scale-{n}-{label}.log").write_text((folder / "out.log").read_text())
    return measured


def bench_scale(sizes: list[int], other: Path | None, limit_s: float, keep: Path | None = None) -> list[Measured]:
    resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE))
    rows: list[Measured] = []
    for n in sizes:
        codes = [(ROOT, "this")] + ([(other, "other")] if other is not None else [])
        for code, label in codes:
            measured = measure(n, code, label, limit_s, keep)
            rows.append(measured)
            print(measured.row(), flush=True)
    return rows


def kills(n: int, count: int, seed: int = 63) -> None:
    """`count` runs of the pool of `n`, each killed with SIGKILL at a random moment once its run directory exists (the
    trace, the planning, the unions, the read-outs), then resumed to its end; each must end with every target ok
    exactly once and its manifest agreeing with its run directory (tests/execute/rundir_check.py)."""
    import random

    from tests.execute.rundir_check import problems

    rng = random.Random(seed)
    for trial in range(count):
        with tempfile.TemporaryDirectory(prefix=f"ncuc-kill-{n}-") as work:
            folder = Path(work)
            (folder / "scale.yaml").write_text(campaign(n))
            env = {
                **os.environ,
                "PATH": f"{FAKE}{os.pathsep}{os.environ.get('PATH', '')}",
                "FAKE_NCU_REPORTS": str(ROOT / "tests" / "fixtures" / "reports"),
                "FAKE_NCU_STATE": str(folder / "fake-state"),
                "PYTHONPATH": str(ROOT),
                "XDG_CACHE_HOME": str(folder / "cache"),
            }
            args = [sys.executable, "-m", "ncucampaign", "run", "scale.yaml", "--out", "runs"]
            run = subprocess.Popen(args, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            started = time.monotonic()
            while not (folder / "runs" / "scale" / "latest").is_dir() and run.poll() is None:
                time.sleep(0.01)  # the run directory is there: from now on the run is one to resume
            time.sleep(rng.uniform(0.0, 3.5))
            at = time.monotonic() - started
            run.kill()
            run.wait()
            begun = (folder / "runs" / "scale" / "latest").is_dir()  # killed before its run directory: a new run
            again = [*args, "--resume"] if begun else args
            resumed = subprocess.run(again, cwd=folder, env=env, capture_output=True, text=True)
            run_dir = (folder / "runs" / "scale" / "latest").resolve()
            found = problems(run_dir) if run_dir.is_dir() else ["no run directory"]
            said = f"{'resume' if begun else 'nothing had started; a new run'} exit {resumed.returncode}, " + (
                "nothing lost" if not found else f"{len(found)} problems"
            )
            print(f"kill {trial + 1} at {at:.2f} s: {said}", flush=True)
            for problem in found[:5]:
                print(f"    {problem}")
