#!/bin/bash
# What the discovery trace costs beyond the application's start under ncu, by how it is taken (issue
# 41): per zoo workload, the application alone, under ncu with nothing profiled, the trace as `plan`
# prints it (gpu__time_duration.sum), and variants of it; each trace's launches listed (`--page raw
# --csv`) and compared with the planned one's (count, symbols, grid, block, NVTX).
#   [VARIANTS="grid grid+block"] [REPS=3] bash tests/gpu/trace_cost.sh OUT [workload ...]
# Variants: grid (--metrics launch__grid_size), grid+block (launch__block_size,launch__grid_size),
# app-replay (--replay-mode application), grid+app-replay, no-nvtx (without --nvtx: what the NVTX
# stacks cost; its listing has none, so it differs).
set -u
out=${1:?OUT folder}; shift
workloads=${*:-decode train_step}
command -v ncu > /dev/null || { echo "trace_cost.sh: no ncu on PATH (run it on a GPU machine)" >&2; exit 2; }
mkdir -p "$out"; work=$(mktemp -d)
. tests/gpu/zoo_trace.bash
for w in $workloads; do
  zoo_trace "$w" || continue
  echo "== $w: in $dir, the application: $app"
  (cd "$dir" && eval "$app" > "$out/$w-warm.log" 2>&1)  # a first run fills what the workload caches
  for rep in $(seq "${REPS:-3}"); do  # interleaved, so that a drift of the machine touches every variant
    (cd "$dir" && start=$(date +%s%N) && eval "$app" > "$out/$w-alone.log" 2>&1; echo "$w alone $(secs $start)") >> "$work/times"
    (cd "$dir" && start=$(date +%s%N) && eval "ncu --kernel-name nothing_matches_this --config-file off --rename-kernels off $app" > "$out/$w-nothing.log" 2>&1; echo "$w nothing $(secs $start)") >> "$work/times"
    for tag in planned ${VARIANTS:-grid grid+block}; do
      case $tag in
        planned) change="" ;;
        grid) change="s|--metrics gpu__time_duration.sum|--metrics launch__grid_size|" ;;
        grid+block) change="s|--metrics gpu__time_duration.sum|--metrics launch__block_size,launch__grid_size|" ;;
        app-replay) change="s|--nvtx |--nvtx --replay-mode application |" ;;
        grid+app-replay) change="s|--metrics gpu__time_duration.sum|--metrics launch__grid_size|; s|--nvtx |--nvtx --replay-mode application |" ;;
        no-nvtx) change="s|--nvtx ||" ;;
        *) echo "trace_cost.sh: no variant $tag" >&2; exit 2 ;;
      esac
      report="$work/$w-$tag.ncu-rep"
      cmd=$(echo "$ncu_cmd" | sed "$change; s| -o [^ ]*| -o $report|")
      (cd "$dir" && start=$(date +%s%N) && eval "$cmd" > "$out/$w-$tag.log" 2>&1; echo "$w $tag $(secs $start) $(grep -c '==PROF== Profiling' "$out/$w-$tag.log") launches") >> "$work/times"
    done
  done
  python3 tests/gpu/medians.py "$work/times" "$w"
  python3 - "$work" "$w" <<'PY'
import subprocess, sys
from pathlib import Path
from ncucampaign.plan.share.launches import parse_raw_csv
from ncucampaign.plan.share.union import import_csv_argv
work, w = Path(sys.argv[1]), sys.argv[2]
def launches(tag):  # listed as a run lists its trace: symbols, grid, block, NVTX stack, in order
    argv = import_csv_argv("ncu", work / f"{w}-{tag}.ncu-rep")
    return [x.identity for x in parse_raw_csv(subprocess.run(argv, capture_output=True, text=True).stdout)]
base = launches("planned")
for report in sorted(work.glob(f"{w}-*.ncu-rep")):
    tag = report.name[len(w) + 1 : -len(".ncu-rep")]
    if tag != "planned":
        other = launches(tag)
        print(f"  {tag}: {len(other)} launches listed, {len(base)} as planned; the same (symbol, grid, block, NVTX) in order: {other == base}")
PY
done
