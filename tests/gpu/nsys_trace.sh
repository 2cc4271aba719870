#!/bin/bash
# Could Nsight Systems take the discovery trace for less than ncu does (issue 41, must-show 2)? Per
# zoo workload, interleaved REPS times after a warm-up: the application alone, under ncu with nothing
# profiled, the trace as `plan` prints it (ncu), and `nsys profile -t cuda,nvtx` of the same command
# with its import and sqlite export; then tests/gpu/nsys_trace.py compares the launches of both.
#   [NSYS=...] [NSYS_LIBS=dir] [REPS=2] bash tests/gpu/nsys_trace.sh OUT [workload ...]
# NSYS: by default the nsys that ships inside Nsight Compute, whose QdstrmImporter turns what it
# collects into a report; NSYS_LIBS: a folder with libraries that importer lacks (libdw.so.1 on the
# H200 machine).
set -u
out=${1:?OUT folder}; shift
workloads=${*:-decode train_step}
nsys=${NSYS:-$(ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | tail -1)}
importer=$(ls "$(dirname "$(dirname "$nsys")")"/linux-desktop-glibc_*-x64/QdstrmImporter 2>/dev/null | tail -1)
command -v ncu > /dev/null || { echo "nsys_trace.sh: no ncu on PATH (run it on a GPU machine)" >&2; exit 2; }
[ -x "$nsys" ] || { echo "nsys_trace.sh: no nsys (set NSYS)" >&2; exit 2; }
mkdir -p "$out"; work=$(mktemp -d)
echo "nsys: $nsys ($("$nsys" --version 2>&1 | head -1)); importer: ${importer:-none}"
. tests/gpu/zoo_trace.bash
for w in $workloads; do
  zoo_trace "$w" || continue
  echo "== $w: in $dir, the application: $app"
  (cd "$dir" && eval "$app" > "$out/$w-warm.log" 2>&1)
  for rep in $(seq "${REPS:-2}"); do  # interleaved, so that a drift of the machine touches every way
    (cd "$dir" && start=$(date +%s%N) && eval "$app" > "$out/$w-alone.log" 2>&1; echo "$w alone $(secs $start)") >> "$work/times"
    (cd "$dir" && start=$(date +%s%N) && eval "ncu --kernel-name nothing_matches_this --config-file off --rename-kernels off $app" > "$out/$w-nothing.log" 2>&1; echo "$w nothing $(secs $start)") >> "$work/times"
    cmd=$(echo "$ncu_cmd" | sed "s| -o [^ ]*| -o $work/$w-ncu|")
    (cd "$dir" && start=$(date +%s%N) && eval "$cmd" > "$out/$w-ncu.log" 2>&1; echo "$w ncu-trace $(secs $start)") >> "$work/times"
    (cd "$dir" && start=$(date +%s%N) \
      && eval "'$nsys' profile -t cuda,nvtx -s none --cpuctxsw=none -f true -o '$work/$w' $app" > "$out/$w-nsys.log" 2>&1 \
      && (cd "$work" && LD_LIBRARY_PATH=${NSYS_LIBS:-} "$importer" -f -i "$work/$w.qdstrm") > "$out/$w-import.log" 2>&1 \
      && "$nsys" export -t sqlite -f true -o "$work/$w.sqlite" "$work/$w.nsys-rep" > "$out/$w-export.log" 2>&1
      echo "$w nsys-trace+import+export $(secs $start) rc=$?") >> "$work/times"
  done
  python3 tests/gpu/medians.py "$work/times" "$w"
  python3 tests/gpu/nsys_trace.py "$work/$w-ncu.ncu-rep" "$work/$w.sqlite" "$union"
done
