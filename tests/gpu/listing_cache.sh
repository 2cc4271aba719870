#!/bin/bash
# What keeping a cached trace's listings saves (execute/trace/listings.py), on a GPU machine with ncu:
# the zoo's decode campaign with its trace made now, then twice with the trace cached; every ncu
# command line is logged, and the trace listings the first run made are replayed in parallel as a
# run without kept listings would (16 at once, as IMPORT_WORKERS), and timed.
#   bash tests/gpu/listing_cache.sh OUT [workload, or a campaign file]
set -u
out=${1:?OUT folder}; workload=${2:-decode}
# without ncu every run would retry each target before failing: say so at once
command -v ncu > /dev/null || { echo "listing_cache.sh: no ncu on PATH (run it on a GPU machine)" >&2; exit 2; }
mkdir -p "$out"; work=$(mktemp -d)
. "$(dirname "$0")/logging_ncu.sh"; logging_ncu "$work"
campaign=tests/gpu/zoo/$workload/campaign.yaml; [[ $workload == *.yaml ]] && campaign=$workload
for pass in first cached-1 cached-2; do
  : > "$work/calls.jsonl"
  start=$(date +%s%N)
  python3 -m ncucampaign run "$campaign" --out "$work/runs" > "$out/$pass.log" 2>&1
  code=$?
  end=$(date +%s%N)
  mv "$work/calls.jsonl" "$work/calls-$pass.jsonl"
  echo "$pass: exit $code, $(( (end - start) / 1000000 )) ms"
  grep -E "^(sharing|limit):" "$out/$pass.log"
done
python3 - "$work" <<'PY'
import json, sys, time, subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
work = Path(sys.argv[1])
def listings(name):
    calls = [json.loads(line) for line in (work / f"calls-{name}.jsonl").read_text().splitlines()]
    return [c for c in calls if c[:1] == ["--import"] and ("/trace-" in c[1] or "/.cache/traces/" in c[1]) and "raw" in c]
for name in ("first", "cached-1", "cached-2"):
    print(f"{name}: {len(listings(name))} listings of the trace")
first = listings("first")
for attempt in (1, 2):
    start = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        codes = list(pool.map(lambda argv: subprocess.run(["ncu", *argv], capture_output=True).returncode, first))
    print(f"replaying the first run's {len(first)} trace listings, 16 at once: {time.perf_counter() - start:.2f} s (exits {sorted(set(codes))})")
PY
