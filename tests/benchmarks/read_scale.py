"""Reading a run at the campaign limit: a run of one fake-ncu target, copied to `targets` targets of one result each,
and 8 copies of it whose every value moved, read by `summarize`, `compare` (the run with itself, and with one where
every value moved), `history` over the 9 runs and `report`. Prints seconds and peak memory per command; nothing here
passes or fails on a number."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def large_run(folder: Path, targets: int) -> Path:
    """A real run of one target (fake ncu, bundled report), its target copied `targets` times."""
    sys.path.insert(0, str(ROOT))
    from tests.conftest import campaign_text, fake_env

    campaign = folder / "scale.yaml"
    campaign.write_text("version: 1\nname: scale\n" + campaign_text("- name: t\n  kernel_name: rmsnorm_kernel\n"))
    done = subprocess.run(
        [sys.executable, "-m", "ncucampaign", "run", str(campaign), "--out", str(folder / "runs"), "--no-share"],
        env=fake_env(),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"the run to copy failed ({done.returncode}): {done.stderr}")
    run = next((folder / "runs" / "scale").glob("2*"))
    manifest = json.loads((run / "manifest.json").read_text())
    (one,) = manifest["targets"]
    manifest["targets"] = [{**copy.deepcopy(one), "name": f"t{i}"} for i in range(targets)]
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def moved_runs(run: Path, count: int) -> list[Path]:
    """`count` copies of `run` beside it (ids one second apart), every recorded value scaled by a tenth more each time:
    every value moves from one to the next."""
    manifest = json.loads((run / "manifest.json").read_text())
    copies = []
    for number in range(1, count + 1):
        data = copy.deepcopy(manifest)
        data["run_id"] = f"{manifest['run_id']}-{number}"
        data["started_at"] = data["started_at"].replace(":00+", f":{number:02d}+", 1)
        for target in data["targets"]:
            for result in target["results"]:
                for value in result["metrics"].values():
                    if isinstance(value["value"], int | float) and not isinstance(value["value"], bool):
                        value["value"] = value["value"] * (1 + 0.1 * number)
        folder = run.parent / data["run_id"]
        folder.mkdir()
        (folder / "manifest.json").write_text(json.dumps(data))
        copies.append(folder)
    return copies


def timed_command(*args: str) -> tuple[float, float, int]:
    """Seconds, peak resident MiB of this child, exit code."""
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(os.devnull, "w") as sink:
        child = subprocess.Popen([sys.executable, "-m", "ncucampaign", *args], stdout=sink, env=env)
        _, status, usage = os.wait4(child.pid, 0)
    return time.perf_counter() - started, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def bench_read(targets: int, rows: list[tuple[str, str, str]]) -> None:
    with tempfile.TemporaryDirectory() as work:
        run = large_run(Path(work), targets)
        size = (run / "manifest.json").stat().st_size / 2**20
        print(f"a run of {targets:,} targets: manifest {size:.0f} MiB")
        later = moved_runs(run, 8)
        for args in (
            ("summarize", str(run)),
            ("summarize", str(run), "--format", "csv"),
            ("summarize", str(run), "--format", "json"),
            ("compare", str(run), str(run)),
            ("compare", str(run), str(later[0])),
            ("compare", str(run), str(run), "--format", "json"),
            ("history", str(run), *map(str, later)),
            ("report", str(run), "-o", str(Path(work) / "report.html")),
        ):
            seconds, peak, code = timed_command(*args)
            shown = {str(run): "RUN", str(later[0]): "MOVED", str(Path(work) / "report.html"): "FILE"}
            what = " ".join(shown.get(a, a) for a in args if a not in map(str, later[1:]))
            what += " + 7 more runs" if args[0] == "history" else ""
            print(f"{what}: exit {code}, {seconds:.2f} s, peak {peak:.0f} MiB", flush=True)
            rows.append(
                (
                    f"{what} ({targets:,} targets)",
                    f"{seconds:.2f} s, {peak:.0f} MiB",
                    f"{seconds / targets * 1e6:.0f} us/target",
                )
            )
