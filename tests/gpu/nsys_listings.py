"""Do the listings the run takes from an Nsight Systems trace equal those ncu made of its own trace?

    python3 tests/gpu/nsys_listings.py CAMPAIGN NCU_RUNS NSYS_RUNS

NCU_RUNS: the --out of a `run` that traced with ncu (NCUCAMPAIGN_NSYS=off); its trace cache keeps what
`ncu --import` listed of the trace, per filter (execute/trace/listings.py). NSYS_RUNS: the --out of a
`run` of the same campaign that traced with Nsight Systems. For every trace of the first run, the
listings of the same members are made from the second run's launches exactly as the run makes them
(execute/trace/by_nsys.py) and compared, filter by filter and launch by launch: ID, symbol, grid,
block, NVTX stack; the listing by function name too. Prints the counts; exits 1 on any difference.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ncucampaign.commands.parts.common import load_plan
from ncucampaign.execute.rundir.cache_files import stamp_of
from ncucampaign.execute.rundir.status import TRACE_PREFIX
from ncucampaign.execute.trace.listings import BY_FUNCTION, decode, kept_launches, nsys_listings
from ncucampaign.execute.trace.selection import member_listings
from ncucampaign.spec.model import TargetOptions


def manifest(runs: Path, campaign: str) -> tuple[Path, dict]:
    run_dir = (runs / campaign / "latest").resolve()
    return run_dir, json.loads((run_dir / "manifest.json").read_text())


def main(campaign_file: str, ncu_runs: str, nsys_runs: str) -> int:
    _, plan = load_plan(campaign_file, None, None)
    invocations = {inv.name: inv for inv in plan.invocations}
    _, by_ncu = manifest(Path(ncu_runs), plan.campaign)
    nsys_dir, by_nsys = manifest(Path(nsys_runs), plan.campaign)
    nsys_traces = {
        tuple(sorted(r["members"])): r
        for r in by_nsys["shared_runs"]
        if r["kind"] == "trace" and r.get("tracer") == "nsys" and r["status"] == "ok"
    }
    cache = Path(ncu_runs) / ".cache" / "traces"
    failed = compared = 0
    for trace in (r for r in by_ncu["shared_runs"] if r["kind"] == "trace" and r["status"] == "ok"):
        short = trace["name"].removeprefix(TRACE_PREFIX)
        (report,) = [p for p in cache.glob(f"{short}*") if p.name.endswith((".ncu-rep", ".ncu-repz"))]
        listed = decode(json.loads(report.with_name(report.name.split(".")[0] + ".listings.json").read_text()),
                        stamp_of(report))  # fmt: skip
        other = nsys_traces.get(tuple(sorted(trace["members"])))
        if other is None:
            print(f"  {trace['name']}: no Nsight Systems trace of the same members ({len(trace['members'])})")
            failed += 1
            continue
        launches = kept_launches(nsys_dir / other["report"]["path"])
        assert launches is not None, "the nsys trace's launches cannot be read"
        members = [invocations[name] for name in trace["members"]]
        every = TargetOptions.model_construct()
        ours = nsys_listings(launches, {(): every, BY_FUNCTION: every, **member_listings(members)})
        for words, theirs in listed.items():
            compared += 1
            mine = ours.get(words)
            if mine != theirs:
                failed += 1
                first = next((i for i, (a, b) in enumerate(zip(mine or [], theirs, strict=False)) if a != b), None)
                print(f"  DIFFER {' '.join(words) or '(every launch)'}: nsys {len(mine or [])}, ncu {len(theirs)}"
                      f"; first difference at {first}: nsys {(mine or [None])[first or 0]}, ncu {theirs[first or 0] if theirs else None}")  # fmt: skip
        every = listed.get((), [])
        print(f"  {trace['name']}: {len(every)} launches, {len(listed)} listings compared with {other['name']}"
              f" ({len(launches)} launches recorded); trace {trace['seconds']:.1f} s by ncu, {other['seconds']:.1f} s"
              " by Nsight Systems")  # fmt: skip
    print(f"listings compared: {compared}, differing or missing: {failed}")
    return 1 if failed or not compared else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
