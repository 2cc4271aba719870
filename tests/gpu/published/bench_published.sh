#!/bin/bash
# The zoo benchmark's rows for the published workloads (docs/shared-runs.md's zoo table: --no-share, trace first,
# cached, back to back on one GPU), then each workload's last run (trace cached) read as a user reads it: `findings` piped
# and at 80 columns through `script`, and `report`'s page. Everything small lands in OUT/published.tgz.
#   PYTHONPATH=$PWD:/tmp/site bash tests/gpu/published/bench_published.sh OUT llama_train [moe_train ...]
# A workload whose three runs outlast one device call runs in calls back to back on the same warm machine
# (bench.py zoo --modes): RUNS=runs/bench MODES=no-share ..., then RUNS=runs/bench MODES="first cached" ...
# TRACERS="nsys off" makes trace first and cached once per tracer (bench.py zoo --tracers; nsys wants
# NCUCAMPAIGN_NSYS_LIBRARY_PATH=$PWD/.libdw on the H200 machine); each tracer's last run is read.
set -u
out=${1:?OUT folder}; shift
root=$(cd "$(dirname "$0")/../../.." && pwd)
runs=${RUNS:-$(mktemp -d /tmp/published-runs.XXXX)}
mkdir -p "$runs"
mkdir -p "$out/read"
nvidia-smi -L > "$out/read/gpu.txt" 2>&1
ncu --version >> "$out/read/gpu.txt" 2>&1
python3 "$root/tests/benchmarks/bench.py" zoo --only "$@" --bare-limit 60 --runs "$runs" ${MODES:+--modes $MODES} ${TRACERS:+--tracers $TRACERS} \
  --json "$out/read/rows.json" --keep "$out/read/kept" 2>&1 | tee "$out/read/bench.txt"
for w in "$@"; do
  for folder in "$runs/$w"/shared*/; do
    run=$(ls -d "$folder"*/*/ 2>/dev/null | grep -v latest | tail -1)
    [ -n "$run" ] || { echo "== $w: no trace-first run in $folder"; continue; }
    name=$w$(basename "$folder" | sed 's/^shared//')  # moe_train, moe_train-nsys
    python3 -m ncucampaign findings "$run" > "$out/read/$name-findings.txt" 2>&1
    COLUMNS=80 script -qc "python3 -m ncucampaign findings $run --top 6" /dev/null > "$out/read/$name-findings-80.txt" 2>&1
    python3 -m ncucampaign report "$run" -o "$out/read/$name-report.html" > /dev/null 2>&1
    echo "== $name findings"; head -c 4000 "$out/read/$name-findings.txt"; echo
  done
done
tar -czf "$out/published.tgz" -C "$out" read && rm -rf "$out/read"
