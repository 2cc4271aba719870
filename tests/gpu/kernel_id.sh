#!/usr/bin/env bash
# What ncu 2025.3.1 picks with --kernel-id invocation numbers, --filter-mode per-launch-config and
# profiler start/stop brackets, on tests/gpu/kernel_id_app.py (42 launches of one kernel, two grids
# alternating; docs/ncu-behaviour.md, "Picking launches in one process"). Each line: the variant,
# its seconds, and the launches it profiled as NVTX range:grid.
#   bash tests/gpu/kernel_id.sh OUT
set -u
out=${1:?OUT folder}; mkdir -p "$out"; app="python3 tests/gpu/kernel_id_app.py"
base="--metrics launch__grid_size --nvtx --config-file off --rename-kernels off --clock-control none --cache-control none"
probe() {  # name, then ncu's filter options (and, after --, the application's own)
  local name=$1; shift; local filters=() extra=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do filters+=("$1"); shift; done; [ $# -gt 0 ] && { shift; extra=("$@"); }
  local start; start=$(date +%s%N)
  ncu $base "${filters[@]}" -f -o "$out/$name" $app "${extra[@]}" > "$out/$name.log" 2>&1
  local code=$? secs; secs=$(( ($(date +%s%N) - start) / 1000000 ))
  printf "%-22s exit %s %s ms  " "$name" "$code" "$secs"
  python3 - "$out/$name.ncu-rep" <<'PY'
import subprocess, sys
from ncucampaign.plan.share.launches import parse_raw_csv
from ncucampaign.plan.share.union import import_csv_argv
listed = parse_raw_csv(subprocess.run(import_csv_argv("ncu", sys.argv[1]), capture_output=True, text=True).stdout)
print(len(listed), "profiled:", " ".join(f"{(x.nvtx[-1] if x.nvtx else '-').split(':')[-1]}:{x.grid.replace(' ', '')}" for x in listed))
PY
}
probe all -k probe_kernel
probe kid_3 --kernel-id ::probe_kernel:3
probe kid_3_or_7 --kernel-id '::probe_kernel:3|7'
probe kid_paren_3_or_7 --kernel-id '::probe_kernel:(3|7)'
probe kid_2_or_5 --kernel-id '::probe_kernel:2|5'
probe per_config_s2_c1 -k probe_kernel -s 2 -c 1 --filter-mode per-launch-config
probe brackets_5 -k probe_kernel --profile-from-start off -- --brackets 3,10,17,24,31
probe brackets_5_no_option -k probe_kernel -- --brackets 3,10,17,24,31
