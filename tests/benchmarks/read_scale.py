"""Reading a run at the campaign limit: a run of one fake-ncu target, copied to
`targets` targets of one result each, read by `summarize` and `compare` in their every format.
Prints seconds and peak memory per command; nothing here passes or fails on a number."""

from __future__ import annotations

import copy
import json
import os
import resource
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


def timed_command(*args: str) -> tuple[float, float, int]:
    """Seconds, peak resident MiB of the child, exit code."""
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(os.devnull, "w") as sink:
        code = subprocess.run([sys.executable, "-m", "ncucampaign", *args], stdout=sink, env=env).returncode
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return time.perf_counter() - started, peak, code


def bench_read(targets: int, rows: list[tuple[str, str, str]]) -> None:
    with tempfile.TemporaryDirectory() as work:
        run = large_run(Path(work), targets)
        size = (run / "manifest.json").stat().st_size / 2**20
        print(f"a run of {targets:,} targets: manifest {size:.0f} MiB")
        for args in (
            ("summarize", str(run)),
            ("summarize", str(run), "--format", "csv"),
            ("summarize", str(run), "--format", "json"),
            ("compare", str(run), str(run)),
            ("compare", str(run), str(run), "--format", "json"),
        ):
            seconds, peak, code = timed_command(*args)
            what = " ".join(a if a != str(run) else "RUN" for a in args)
            print(f"{what}: exit {code}, {seconds:.2f} s, peak of the children so far {peak:.0f} MiB")
            rows.append(
                (f"{what} ({targets:,} targets)", f"{seconds:.2f} s", f"{seconds / targets * 1e6:.0f} us/target")
            )
