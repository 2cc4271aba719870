#!/usr/bin/env bash
# Whether one application start can serve several ncu sessions, each picking its own launches
# (docs/ncu-behaviour.md, "Profiler brackets from a hook": the attach candidate). The application is
# tests/gpu/kernel_id_app.py, started by `ncu --mode launch`; two `ncu --mode attach` sessions follow,
# the first picking it3, the second it20. Per variant: each session's exit, seconds and the launches
# its report holds (NVTX range:grid), then the launcher's exit and its last lines.
#   bash tests/gpu/attach_check.sh OUT
set -u
out=${1:?OUT folder}; mkdir -p "$out"; app="python3 tests/gpu/kernel_id_app.py"
base="--metrics launch__grid_size --config-file off"  # what a session takes; --nvtx is the launcher's (attach refuses it)
listed() {
  python3 - "$1" <<'PY'
import os, subprocess, sys
from ncucampaign.plan.share.launches import parse_raw_csv
from ncucampaign.plan.share.union import import_csv_argv
if not os.path.exists(sys.argv[1]):
    print("no report"); sys.exit()
listed = parse_raw_csv(subprocess.run(import_csv_argv("ncu", sys.argv[1]), capture_output=True, text=True).stdout)
print(len(listed), "profiled:", " ".join(f"{(x.nvtx[-1] if x.nvtx else '-').split(':')[-1]}:{x.grid.replace(' ', '')}" for x in listed))
PY
}
session() {  # variant, session name, then ncu's options
  local variant=$1 name=$2; shift 2; local start; start=$(date +%s%N)
  timeout 30 ncu --mode attach "$@" $base -f -o "$out/$variant-$name" > "$out/$variant-$name.log" 2>&1
  local code=$?
  printf "  %-8s exit %s %5s ms  " "$name" "$code" "$(( ($(date +%s%N) - start) / 1000000 ))"
  listed "$out/$variant-$name.ncu-rep"
  grep -E "==(ERROR|WARNING)==" "$out/$variant-$name.log" | head -3 | sed 's/^/    /'
}
variant() {  # name, then the launcher's extra ncu options; attach sessions get ATTACH's options
  local name=$1; shift
  echo "== $name"
  timeout 45 ncu --mode launch --nvtx "$@" $app > "$out/$name-launch.log" 2>&1 &
  local launcher=$! waited=0
  until grep -q "Waiting for profiler" "$out/$name-launch.log" 2> /dev/null || [ $waited -ge 300 ]; do
    sleep 0.1; waited=$((waited + 1))
  done
  session "$name" first "${ATTACH[@]}" --kernel-id ::probe_kernel:5 -c 1
  session "$name" second "${ATTACH[@]}" --kernel-id ::probe_kernel:22 -c 1
  wait $launcher; echo "  launcher exit $?"; tail -4 "$out/$name-launch.log" | sed 's/^/    /'
}
ATTACH=(--hostname 127.0.0.1); variant localhost
ATTACH=(); variant default_host
