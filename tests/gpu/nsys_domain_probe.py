"""Where Nsight Systems and ncu place the NVTX ranges of named domains (a probe; docs/ncu-behaviour.md, "Workloads
from published libraries"). An export holding any named domain's push/pop range is refused
(execute/trace/nsys_export.py): on `multirank`, ncu had NCCL's ncclCommInitRankConfig open at every launch and nsys
at none. Whether that holds for CUB's own ranges (`CCCL@cub::DeviceReduce::Sum`, on moe_train) decides whether such
an application could take nsys's trace. This traces one application both ways, its first LAUNCHES launches, and
prints per domain how many launches each tool places in one of its ranges and how many listings agree.
    [NCUCAMPAIGN_NSYS_LIBRARY_PATH=dir] python3 tests/gpu/nsys_domain_probe.py OUT CWD -- COMMAND ...
e.g. python3 tests/gpu/nsys_domain_probe.py $OUT tests/gpu/zoo/moe_train -- python3 moe_train.py"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

from ncucampaign.execute.trace.by_nsys import find_nsys, profile_argv
from ncucampaign.execute.trace.ncu_import import list_launches
from ncucampaign.plan.share.union import FUNCTIONS, import_csv_argv

LAUNCHES = 2000
DEFAULT = "<default domain>"  # how ncu names the default domain in a listing
PUSH_POP, DOMAIN_CREATE = 59, 75  # NVTX_EVENTS.eventType


def nsys_listing(out: Path, cwd: Path, command: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """(function, 'domain:range' stack from the bottom) of each kernel launch nsys traced, in launch order."""
    tools = find_nsys("ncu", os.environ)
    if isinstance(tools, str):
        raise SystemExit(f"no nsys: {tools}")
    env = dict(os.environ)
    if tools.libraries:
        env["LD_LIBRARY_PATH"] = tools.libraries + ":" + env.get("LD_LIBRARY_PATH", "")
    base = out / "nsys-trace"
    subprocess.run(profile_argv(tools.nsys, base, command), cwd=cwd, check=False, timeout=600)
    report = base.with_suffix(".nsys-rep")
    if not report.exists() and base.with_suffix(".qdstrm").exists() and tools.importer is not None:
        subprocess.run([str(tools.importer), "-f", "-i", str(base.with_suffix(".qdstrm"))], env=env, timeout=600)
    export = base.with_suffix(".sqlite")
    subprocess.run([str(tools.nsys), "export", "-t", "sqlite", "-f", "true", "-o", str(export), str(report)],
                   check=True, timeout=600)  # fmt: skip
    return stacks_of_export(export)


def stacks_of_export(export: Path) -> list[tuple[str, tuple[str, ...]]]:
    db = sqlite3.connect(export)
    domains = dict(db.execute(f"select domainId, text from NVTX_EVENTS where eventType = {DOMAIN_CREATE}").fetchall())
    ranges: dict[int, list[tuple[int, int, str]]] = {}
    for start, end, text, string, domain, thread in db.execute(
        "select e.start, e.end, e.text, s.value, coalesce(e.domainId, 0), e.globalTid from NVTX_EVENTS e"
        f" left join StringIds s on s.id = e.textId where e.eventType = {PUSH_POP} order by e.start"
    ):
        name = f"{domains.get(domain, f'domain {domain}') if domain else DEFAULT}:{text or string}"
        ranges.setdefault(thread, []).append((start, end if end is not None else 2**63, name))
    launches = []
    for call, thread, function in db.execute(
        "select r.start, r.globalTid, s.value from CUPTI_ACTIVITY_KIND_KERNEL k join CUPTI_ACTIVITY_KIND_RUNTIME r"
        " on r.correlationId = k.correlationId"  # one process: its correlation IDs are unique
        f" join StringIds s on s.id = k.shortName order by r.start limit {LAUNCHES}"
    ):
        open_ = tuple(name for start, end, name in ranges.get(thread, []) if start <= call < end)
        launches.append((function, open_))
    return launches


def ncu_listing(out: Path, cwd: Path, command: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The same of ncu's own trace (--nvtx, every kernel, the first LAUNCHES)."""
    report = out / "ncu-trace.ncu-rep"
    trace = ["ncu", "--nvtx", "--metrics", "gpu__time_duration.sum", "--launch-count", str(LAUNCHES), "--kill", "yes",
             "--config-file", "off", "-f", "-o", str(report), *command]  # fmt: skip
    subprocess.run(trace, cwd=cwd, check=False, timeout=600, stdout=subprocess.DEVNULL)
    listed = list_launches(import_csv_argv("ncu", report, names=FUNCTIONS))  # named by function: in `symbol`
    return [(launch.function or launch.symbol, launch.nvtx) for launch in listed]


def main() -> int:
    out, cwd, command = Path(sys.argv[1]).absolute(), Path(sys.argv[2]), sys.argv[sys.argv.index("--") + 1 :]
    out.mkdir(parents=True, exist_ok=True)
    by_nsys, by_ncu = nsys_listing(out, cwd, command), ncu_listing(out, cwd, command)
    both = min(len(by_nsys), len(by_ncu))
    print(f"launches: nsys {len(by_nsys)}, ncu {len(by_ncu)}; compared: the first {both}")
    names_differ = sum(by_nsys[i][0] != by_ncu[i][0] for i in range(both))
    print(f"function names differ at {names_differ} of {both} places (order: a non-zero count misaligns the rest)")
    for label, listing in (("nsys", by_nsys), ("ncu", by_ncu)):
        held = Counter(name.split(":", 1)[0] for _, stack in listing[:both] for name in set(stack))
        print(f"{label}: launches inside a range, by domain: {dict(held)}")
    for domain in sorted({n.split(":", 1)[0] for _, s in by_nsys[:both] + by_ncu[:both] for n in s}):

        def of(stack: tuple[str, ...], domain: str = domain) -> tuple[str, ...]:
            return tuple(n for n in stack if n.startswith(domain + ":"))

        same = sum(of(by_nsys[i][1]) == of(by_ncu[i][1]) for i in range(both))
        print(f"domain {domain}: stacks agree at {same} of {both} launches")
        shown = [i for i in range(both) if of(by_nsys[i][1]) != of(by_ncu[i][1])][:5]
        for i in shown:
            print(f"  #{i} {by_ncu[i][0][:40]}: nsys {of(by_nsys[i][1])} / ncu {of(by_ncu[i][1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
