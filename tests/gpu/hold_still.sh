#!/bin/bash
# Does a cached run hold its groups still, and does the limit line name a measured start (issue 41)?
# A campaign run with its trace made now, then CACHED more times with the trace cached; per run its
# exit, seconds, the groups of its shared runs (members, launches), and its sharing and limit lines.
#   bash tests/gpu/hold_still.sh OUT [campaign] [cached runs]
set -u
out=${1:?OUT folder}; campaign=${2:-campaigns/spread.yaml}; cached=${3:-3}
command -v ncu > /dev/null || { echo "hold_still.sh: no ncu on PATH (run it on a GPU machine)" >&2; exit 2; }
mkdir -p "$out"; work=$(mktemp -d); name=$(basename "$campaign" .yaml)
for pass in $(seq 0 "$cached"); do
  label=$([ "$pass" = 0 ] && echo "trace first" || echo "cached $pass")
  start=$(date +%s%N)
  python3 -m ncucampaign run "$campaign" --out "$work/runs" > "$out/$name-$pass.log" 2>&1; code=$?
  echo "== $label: exit $code, $(( ($(date +%s%N) - start) / 1000000 )) ms"
  grep -E "^(sharing|limit):" "$out/$name-$pass.log"
  python3 - "$(ls -d "$work"/runs/*/latest)" <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
groups = [(sorted(r["members"]), (r.get("report") or {}).get("results")) for r in m["shared_runs"] if r.get("kind") == "union"]
for members, launches in groups:
    print(f"  union of {len(members)} ({launches} launches): {' '.join(members)}")
print("  statuses:", sorted({t["status"] for t in m["targets"]}))
PY
done
