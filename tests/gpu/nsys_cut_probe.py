"""What Nsight Systems leaves when a discovery trace's timeout stops it (a probe; docs/ncu-behaviour.md, "Signals").
ncucampaign stops a run at its timeout with SIGINT to its process group (execute/process/groups.py); ncu then
writes the launches it traced (measured). This asks the same of `nsys profile` as by_nsys.py runs it: an
application launches 300 kernels in NVTX ranges, says so, then sleeps; its group gets SIGINT. Printed: how nsys
ended, what it wrote, and what its importer and export make of it (kernel rows, NVTX ranges).
    [NCUCAMPAIGN_NSYS_LIBRARY_PATH=dir] python3 tests/gpu/nsys_cut_probe.py OUT"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from ncucampaign.execute.trace.by_nsys import find_nsys, profile_argv

APP = """
import time, torch
x = torch.randn(256, 256, device="cuda")
for step in range(30):
    torch.cuda.nvtx.range_push(f"step_{step}")
    for _ in range(10):
        x = torch.tanh(x @ x)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print("launched", flush=True)
time.sleep(600)
"""


def main() -> int:
    out = Path(sys.argv[1])
    work = out / "nsys-cut"
    work.mkdir(parents=True, exist_ok=True)
    tools = find_nsys("ncu", os.environ)
    if isinstance(tools, str):
        print("no nsys:", tools)
        return 2
    app = work / "app.py"
    app.write_text(APP)
    log = work / "profile.log"
    argv = profile_argv(tools.nsys, work / "trace", [sys.executable, str(app)])
    print("argv:", " ".join(argv))
    began = time.monotonic()
    with open(log, "w") as handle:
        process = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    while "launched" not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() - began > 120:
            print("the application never said it launched; rc", process.poll())
            print(log.read_text(errors="replace")[-3000:])
            return 1
        time.sleep(0.2)
    time.sleep(2)
    alone = os.environ.get("PROBE_SIGINT") == "nsys"  # to nsys alone, not its group
    print(f"launched after {time.monotonic() - began:.1f} s; SIGINT to {'nsys alone' if alone else 'the group'}")
    stopped = time.monotonic()
    (os.kill if alone else os.killpg)(process.pid, signal.SIGINT)
    try:
        code = process.wait(timeout=90)
        print(f"nsys exited {code} {time.monotonic() - stopped:.1f} s after SIGINT")
    except subprocess.TimeoutExpired:
        print("nsys still running 90 s after SIGINT: SIGKILL")
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    print("profile log tail:\n" + log.read_text(errors="replace")[-2500:])
    print("files:", sorted((p.name, p.stat().st_size) for p in work.iterdir()))
    env = dict(os.environ)
    if tools.libraries:
        env["LD_LIBRARY_PATH"] = tools.libraries + ":" + env.get("LD_LIBRARY_PATH", "")
    report = work / "trace.nsys-rep"
    if not report.exists() and (work / "trace.qdstrm").exists() and tools.importer is not None:
        done = subprocess.run([str(tools.importer), "-f", "-i", str(work / "trace.qdstrm")], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        print("importer:", done.returncode, (done.stdout + done.stderr)[-1500:])
    if not report.exists():
        print("no report")
        return 0
    export = work / "trace.sqlite"
    done = subprocess.run([str(tools.nsys), "export", "-t", "sqlite", "-f", "true", "-o", str(export), str(report)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    print("export:", done.returncode, (done.stdout + done.stderr)[-1500:])
    if export.exists():
        db = sqlite3.connect(export)
        tables = {row[0] for row in db.execute("select name from sqlite_master where type='table'")}
        for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME"):
            count = db.execute(f"select count(*) from {table}").fetchone()[0] if table in tables else "no table"
            print(f"{table}: {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
