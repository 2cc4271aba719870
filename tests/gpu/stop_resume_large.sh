#!/bin/bash
# A long run stopped and resumed on real ncu (issue 80): tests/gpu/zoo/train_step/large.yaml (360 targets of a
# training step, unions read out of their reports), through a pipe, stopped with SIGINT once its second union has
# begun, then --resume'd. Prints the exit codes, the closing lines, the application starts of each session (from a
# logging ncu: the ncu processes that ran the application), the progress lines, the shared runs each session made
# and which targets the resume read out of a union that had finished; every target must end ok exactly once.
#   bash tests/gpu/stop_resume_large.sh OUT
#   STOP_AT='reading out its' AFTER=0 bash tests/gpu/stop_resume_large.sh OUT   # as a finished union is read out
set -u
out=${1:?OUT folder}
command -v ncu > /dev/null || { echo "stop_resume_large.sh: no ncu on PATH (run it on a GPU machine)" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
campaign=$here/tests/gpu/zoo/train_step/large.yaml
mkdir -p "$out"; work=$(mktemp -d)
. "$here/tests/gpu/logging_ncu.sh"; logging_ncu "$work"
export PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH}
starts() {  # ncu processes that ran the application, of those logged
  python3 - "$work/calls.jsonl" <<'PY'
import json, sys
calls = [json.loads(line) for line in open(sys.argv[1])]
ran = [c for c in calls if "--import" not in c and not (c and c[0] in ("--version", "--help", "--list-sections", "--list-sets"))]
traces = sum(1 for c in ran if "--metrics" in c and "gpu__time_duration.sum" in c and "--nvtx" in c)
print(f"application starts: {len(ran)} ({traces} of them a discovery trace), imports: {sum('--import' in c for c in calls)}")
PY
}
: > "$work/calls.jsonl"; start=$(date +%s%N)
python3 -m ncucampaign run "$campaign" --out "$work/runs" > "$out/first.log" 2>&1 &
pid=$!
stop_at=${STOP_AT:-shared/2: .*launches to profile}
until grep -q "$stop_at" "$out/first.log" 2>/dev/null || ! kill -0 $pid 2>/dev/null; do sleep 0.1; done
sleep "${AFTER:-2}"; kill -INT $pid; asked=$(date +%s%N); wait $pid; code=$?
echo "== first run: SIGINT at '$stop_at': exit $code, $(( (asked - start) / 1000000 )) ms in, ended $(( ($(date +%s%N) - asked) / 1000000 )) ms after the signal"
starts
grep -E "launches|^[0-9]+ targets:|--resume|error" "$out/first.log" | cut -c1-300
run=$(readlink -f "$work/runs/zoo-train_step-large/latest")
python3 - "$run" > "$out/before.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
print(json.dumps({"shared": [[r["name"], r["kind"], r["status"]] for r in m["shared_runs"]],
                  "ok": [t["name"] for t in m["targets"] if t["status"] == "ok"]}))
PY
: > "$work/calls.jsonl"; start=$(date +%s%N)
python3 -m ncucampaign run --resume "$run" > "$out/resume.log" 2>&1; code=$?
echo "== --resume: exit $code, $(( ($(date +%s%N) - start) / 1000000 )) ms"
starts
grep -E "launches|^[0-9]+ targets:|^sharing|error" "$out/resume.log" | cut -c1-400
python3 - "$run" "$out/before.json" <<'PY'
import json, sys, collections
m = json.load(open(sys.argv[1] + "/manifest.json"))
before = json.load(open(sys.argv[2]))
known = {name for name, _, _ in before["shared"]}
print("shared runs before the stop:", before["shared"])
print("shared runs the resume made:", [[r["name"], r["kind"], r["status"]] for r in m["shared_runs"] if r["name"] not in known])
finished = {name for name, kind, status in before["shared"] if kind == "union" and status == "ok"}
read_out = [t["name"] for t in m["targets"] if "read out on resume" in t["message"]]
print(f"read out on resume of a union that had finished: {len(read_out)}", read_out[:5])
oks = [t for t in m["targets"] if t["status"] == "ok" and sum(a["status"] == "ok" for a in t["attempts"]) == 1]
print(f"targets ok exactly once: {len(oks)} of {len(m['targets'])};", dict(collections.Counter(t["status"] for t in m["targets"])))
PY
gzip -c "$run/manifest.json" > "$out/manifest.json.gz"
rm -rf "$work"
