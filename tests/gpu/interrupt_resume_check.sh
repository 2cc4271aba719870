#!/bin/bash
# Interrupts and resumes on real ncu, on the zoo's workloads (none written for this check): doctor; `run` with the
# defaults users get (shared, trace first) on several workloads, every ncu command line logged, so that
# the processes a run starts are counted (no counters probe of its own); a Ctrl-C during a real
# attempt (exit 130, the run interrupted) and the --resume that finishes it; a kill -9 a second in and
# the --resume that finishes it.
#   bash tests/gpu/interrupt_resume_check.sh OUT [workload ...]
set -u
out=${1:?OUT folder}; shift
workloads=${*:-decode cuda_cpp streams convnet}
command -v ncu > /dev/null || { echo "interrupt_resume_check.sh: no ncu on PATH (run it on a GPU machine)" >&2; exit 2; }
mkdir -p "$out"; work=$(mktemp -d)
. "$(dirname "$0")/logging_ncu.sh"; logging_ncu "$work"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
counts() {  # ncu processes the last command started: all, those that ran an application, imports
  python3 - "$work/calls.jsonl" <<'PY'
import json, sys
calls = [json.loads(line) for line in open(sys.argv[1])]
imports = sum(1 for c in calls if "--import" in c)
asks = sum(1 for c in calls if c and c[0] in ("--version", "--help", "--list-sections", "--list-sets"))
print(f"ncu processes: {len(calls)} ({len(calls) - imports - asks} ran the application, {imports} imports, {asks} asked what ncu is)")
PY
}
statuses() {
  python3 - "$1" <<'PY'
import json, sys, collections
m = json.load(open(sys.argv[1] + "/manifest.json"))
print(f"  state {m['state']}; targets", dict(collections.Counter(t["status"] for t in m["targets"])))
PY
}
: > "$work/calls.jsonl"; start=$(date +%s%N)
python3 -m ncucampaign doctor > "$out/doctor.log" 2>&1; echo "doctor: exit $?, $(ms $start) ms"; cat "$out/doctor.log"; counts
for w in $workloads; do
  : > "$work/calls.jsonl"; start=$(date +%s%N)
  python3 -m ncucampaign run "tests/gpu/zoo/$w/campaign.yaml" --out "$work/runs" > "$out/$w.log" 2>&1; code=$?
  echo "$w: exit $code, $(ms $start) ms"; counts
  grep -E "^(sharing|limit|samples):|error" "$out/$w.log"; statuses "$work/runs/zoo-$w/latest"
done
# Ctrl-C while an ncu attempt of the decode campaign runs, then --resume
: > "$work/calls.jsonl"; start=$(date +%s%N)
python3 -m ncucampaign run tests/gpu/zoo/decode/campaign.yaml --out "$work/int" --only rmsnorm_0 gemm_0 > "$out/int.log" 2>&1 &
pid=$!
until grep -q '"process_group": [0-9]' "$work"/int/zoo-decode/latest/manifest.json 2>/dev/null || ! kill -0 $pid 2>/dev/null; do sleep 0.2; done
kill -INT $pid; wait $pid; code=$?
echo "Ctrl-C during an attempt: exit $code after $(ms $start) ms"; statuses "$work/int/zoo-decode/latest"; tail -3 "$out/int.log"
start=$(date +%s%N)
python3 -m ncucampaign run --resume "$work/int/zoo-decode/latest" > "$out/int-resume.log" 2>&1
echo "--resume: exit $?, $(ms $start) ms"; statuses "$work/int/zoo-decode/latest"
# kill -9 a second in (the run directory is made before the first slow step), then --resume
python3 -m ncucampaign run tests/gpu/zoo/cuda_cpp/campaign.yaml --out "$work/kill" > "$out/kill.log" 2>&1 &
pid=$!; sleep 1.0; kill -9 $pid; wait $pid 2>/dev/null
if [ -e "$work/kill/zoo-cuda_cpp/latest" ]; then
  start=$(date +%s%N)
  python3 -m ncucampaign run --resume "$work/kill/zoo-cuda_cpp/latest" > "$out/kill-resume.log" 2>&1
  echo "kill -9 at 1 s, --resume: exit $?, $(ms $start) ms"; statuses "$work/kill/zoo-cuda_cpp/latest"
else
  echo "kill -9 at 1 s: no run directory yet (nothing was started)"
fi
