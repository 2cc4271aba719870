#!/bin/bash
# What the discovery trace costs beyond the application's start under ncu, by the metric it collects
# (issue 41): per zoo workload, the application alone, under ncu with nothing profiled, the trace as
# `plan` prints it (gpu__time_duration.sum), and the same trace collecting launch attributes only; each
# trace's launches listed (`--page raw --csv`) and compared (count, symbols, grid, block, NVTX).
#   bash tests/gpu/trace_cost.sh OUT [workload ...]
set -u
out=${1:?OUT folder}; shift
workloads=${*:-decode train_step}
command -v ncu > /dev/null || { echo "trace_cost.sh: no ncu on PATH (run it on a GPU machine)" >&2; exit 2; }
mkdir -p "$out"; work=$(mktemp -d)
secs() { python3 -c "import sys; print(f'{(int(sys.argv[2]) - int(sys.argv[1])) / 1e9:.1f}')" "$1" "$(date +%s%N)"; }
for w in $workloads; do
  campaign=tests/gpu/zoo/$w/campaign.yaml
  trace=$(python3 -m ncucampaign plan "$campaign" 2>/dev/null | sed -n 's/^#   the discovery trace ([^)]*): //p' | head -1)
  [ -n "$trace" ] || { echo "$w: no trace in plan's output"; continue; }
  dir=${trace#cd }; dir=${dir%% && *}; ncu_cmd=${trace#* && }
  app=$(echo "$ncu_cmd" | sed 's/.* -f -o [^ ]* //')
  echo "== $w: in $dir, the application: $app"
  (cd "$dir" && start=$(date +%s%N) && eval "$app" > "$out/$w-alone.log" 2>&1; echo "alone: $(secs $start) s (exit $?)")
  (cd "$dir" && start=$(date +%s%N) && eval "ncu --kernel-name nothing_matches_this --config-file off --rename-kernels off $app" > "$out/$w-nothing.log" 2>&1; echo "under ncu, nothing profiled: $(secs $start) s")
  for metric in gpu__time_duration.sum launch__grid_size launch__block_size,launch__grid_size; do
    tag=${metric%%,*}; report="$work/$w-$tag.ncu-rep"
    cmd=$(echo "$ncu_cmd" | sed "s|--metrics gpu__time_duration.sum|--metrics $metric|; s| -o [^ ]*| -o $report|")
    (cd "$dir" && start=$(date +%s%N) && eval "$cmd" > "$out/$w-$tag.log" 2>&1; echo "trace --metrics $metric: $(secs $start) s, $(grep -c '==PROF== Profiling' "$out/$w-$tag.log") launches profiled")
  done
  python3 - "$work" "$w" <<'PY'
import subprocess, sys
from pathlib import Path
from ncucampaign.plan.share.launches import parse_raw_csv
from ncucampaign.plan.share.union import import_csv_argv
work, w = Path(sys.argv[1]), sys.argv[2]
def launches(tag):  # listed as a run lists its trace: symbols, grid, block, NVTX stack, in order
    argv = import_csv_argv("ncu", work / f"{w}-{tag}.ncu-rep")
    return [x.identity for x in parse_raw_csv(subprocess.run(argv, capture_output=True, text=True).stdout)]
base = launches("gpu__time_duration.sum")
for tag in ("launch__grid_size", "launch__block_size"):
    other = launches(tag)
    print(f"  {tag}: {len(other)} launches listed, {len(base)} with gpu__time_duration.sum; the same (symbol, grid, block, NVTX) in order: {other == base}")
PY
done
