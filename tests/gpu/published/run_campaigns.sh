#!/bin/bash
# Each published workload's zoo campaign (tests/gpu/zoo/W/campaign.yaml) run as a user runs it, shared runs with
# the machine's default tracer, then read as a user reads it: `findings` (piped, and at 80 columns through
# `script`) and `report` (the page). Everything lands in OUT/W/; the reports themselves stay out (large).
#   PYTHONPATH=$PWD:/tmp/site bash tests/gpu/published/run_campaigns.sh OUT [workload ...]
set -u
out=${1:?OUT folder}; shift
zoo=$(cd "$(dirname "$0")/../zoo" && pwd)
workloads=("$@"); [ ${#workloads[@]} -gt 0 ] || workloads=(llama_train llama_serve moe_train)
for w in "${workloads[@]}"; do
  [ -f "$zoo/$w/campaign.yaml" ] || { echo "== $w: no campaign.yaml"; continue; }
  mkdir -p "$out/$w"
  start=$(date +%s%N)
  timeout 240 python3 -m ncucampaign run "$zoo/$w/campaign.yaml" --out "$out/$w/runs" > "$out/$w/run.txt" 2>&1; code=$?
  echo "== $w run: exit $code, $(( ($(date +%s%N) - start) / 1000000 )) ms"
  tail -12 "$out/$w/run.txt" | cut -c1-400
  run=$(ls -d "$out/$w"/runs/*/*/ 2>/dev/null | grep -v latest | tail -1)
  [ -n "$run" ] || continue
  python3 -m ncucampaign findings "$run" > "$out/$w/findings.txt" 2>&1
  COLUMNS=80 script -qc "python3 -m ncucampaign findings $run --top 6" /dev/null > "$out/$w/findings-80.txt" 2>&1
  python3 -m ncucampaign report "$run" -o "$out/$w/report.html" > "$out/$w/report.txt" 2>&1
  head -c 3000 "$out/$w/findings.txt"; echo
  cp "$run/manifest.json" "$out/$w/"
  rm -rf "$out/$w/runs"
done
