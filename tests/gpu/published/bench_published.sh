#!/bin/bash
# The zoo benchmark's rows for the published workloads (docs/shared-runs.md's zoo table: --no-share, trace first,
# cached, back to back on one GPU), then each workload's last run (trace cached) read as a user reads it: `findings` piped
# and at 80 columns through `script`, and `report`'s page. Everything small lands in OUT/published.tgz.
#   PYTHONPATH=$PWD:/tmp/site bash tests/gpu/published/bench_published.sh OUT llama_train [moe_train ...]
# A workload whose three runs outlast one device call runs in calls back to back on the same warm machine
# (bench.py zoo --modes): RUNS=runs/bench MODES=no-share ..., then RUNS=runs/bench MODES="first cached" ...
set -u
out=${1:?OUT folder}; shift
root=$(cd "$(dirname "$0")/../../.." && pwd)
runs=${RUNS:-$(mktemp -d /tmp/published-runs.XXXX)}
mkdir -p "$runs"
mkdir -p "$out/read"
nvidia-smi -L > "$out/read/gpu.txt" 2>&1
ncu --version >> "$out/read/gpu.txt" 2>&1
python3 "$root/tests/benchmarks/bench.py" zoo --only "$@" --bare-limit 60 --runs "$runs" ${MODES:+--modes $MODES} \
  --json "$out/read/rows.json" --keep "$out/read/kept" 2>&1 | tee "$out/read/bench.txt"
for w in "$@"; do
  run=$(ls -d "$runs/$w"/shared/*/*/ 2>/dev/null | grep -v latest | tail -1)
  [ -n "$run" ] || { echo "== $w: no trace-first run"; continue; }
  python3 -m ncucampaign findings "$run" > "$out/read/$w-findings.txt" 2>&1
  COLUMNS=80 script -qc "python3 -m ncucampaign findings $run --top 6" /dev/null > "$out/read/$w-findings-80.txt" 2>&1
  python3 -m ncucampaign report "$run" -o "$out/read/$w-report.html" > /dev/null 2>&1
  echo "== $w findings"; head -c 4000 "$out/read/$w-findings.txt"; echo
done
tar -czf "$out/published.tgz" -C "$out" read && rm -rf "$out/read"
