#!/bin/bash
# The discovery trace by Nsight Systems against ncu's, on zoo workloads (issue 41, must-show 2): per
# workload, after a warm-up run of the application, `run` with the trace by ncu (NCUCAMPAIGN_NSYS=off)
# and `run` with the trace by Nsight Systems, back to back, each fresh; then nsys_listings.py compares
# every listing the run takes from either trace, and the lines each run printed are shown.
#   [NCUCAMPAIGN_NSYS_LIBRARY_PATH=dir] bash tests/gpu/nsys_check.sh OUT [workload ...]
set -u
out=${1:?OUT folder}; shift
workloads=${*:-decode train_step}
command -v ncu > /dev/null || { echo "nsys_check.sh: no ncu on PATH (run it on a GPU machine)" >&2; exit 2; }
mkdir -p "$out"
python3 -c "import os; from ncucampaign.execute.trace.by_nsys import find_nsys, importer_problem as p
t = find_nsys('ncu', os.environ); print('nsys:', t, '' if isinstance(t, str) else p(t))"
. tests/gpu/zoo_trace.bash
for w in $workloads; do
  zoo_trace "$w" || continue
  echo "== $w"
  (cd "$dir" && eval "$app" > "$out/$w-warm.log" 2>&1)
  campaign=tests/gpu/zoo/$w/campaign.yaml
  for tracer in ncu nsys; do
    runs=$out/$w-$tracer
    start=$(date +%s%N)
    if [ "$tracer" = ncu ]; then
      NCUCAMPAIGN_NSYS=off python3 -m ncucampaign run "$campaign" --out "$runs" > "$out/$w-$tracer.log" 2>&1
    else
      python3 -m ncucampaign run "$campaign" --out "$runs" > "$out/$w-$tracer.log" 2>&1
    fi
    echo "  [$tracer] rc=$? $(secs "$start") s"
    grep -E "^(sharing|limit|  alone):" "$out/$w-$tracer.log" | sed "s/^/  [$tracer] /"
  done
  grep -h "^# ncucampaign: traced by\|^# ncucampaign: [0-9]* launches\|^# ncucampaign: not used" "$out/$w"-*/*/latest/logs/shared/trace-*.log | sed "s/^/  /"
  python3 tests/gpu/nsys_listings.py "$campaign" "$out/$w-ncu" "$out/$w-nsys"
  cp "$out/$w-nsys"/*/latest/logs/shared/trace-*.log "$out/$w-nsys-trace.log" 2>/dev/null
done
