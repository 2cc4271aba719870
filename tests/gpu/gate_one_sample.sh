#!/bin/bash
# Issue 33, must-show 2, on real ncu: tests/gpu/gate.yaml with one sample a side (no `samples:`, one launch each: what a
# campaign without `samples:` gives). 5 A/A comparisons against one baseline must give no gate failure;
# the FFN knob (DECODE_FFN_EXTRA, the down projection's weight 1 + knob times wider) must fail 5 of 5;
# `ab` without --a/--b (an A/A calibration) must print no false verdict. Runs interleave: base, slow, ...
# The runs are kept under OUTDIR/g1 (short: the device returns files 16 folders deep at most).
# On the GPU machine, from the repository root:  bash tests/gpu/gate_one_sample.sh "$OUT" [knob [slow-only]]
# (slow-only: the baseline and the 5 knob runs, no A/A and no ab).
set -u
out=${1:?usage: gate_one_sample.sh OUTDIR [knob [slow-only]]}
knob=${2:-1.2}
only=${3:-}
runs=$out/g1
mkdir -p "$runs"
# One sample a side: gate.yaml takes its samples as launches (samples N implies launch_count N, and
# --samples 1 would leave every matching launch in); so its copy without `samples:` and one launch each.
campaign=tests/gpu/gate-one-sample.yaml
python3 - tests/gpu/gate.yaml "$campaign" <<'PY'
import sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
spec["defaults"].pop("samples")
spec["defaults"]["launch_count"] = 1
for target in spec["targets"]:
    target.pop("samples", None)
open(sys.argv[2], "w").write(yaml.safe_dump(spec, sort_keys=False))
PY
nc() { python3 -m ncucampaign "$@"; }
one() {  # one run: folder, knob value
  local start=$SECONDS
  DECODE_FFN_EXTRA=$2 nc run "$campaign" --out "$runs/$1" > "$runs/$1.log" 2>&1
  echo "run $1 (knob $2): exit $? in $((SECONDS - start)) s; $(tail -n 1 "$runs/$1.log")"
}
one base0 0
for i in 1 2 3 4 5; do
  [ -z "$only" ] && one "base$i" 0
  one "slow$i" "$knob"
done
gate() {  # compare the baseline with one run; print the gate's outcome
  nc compare "$runs/base0/gate/latest" "$runs/$1/gate/latest" --fail-on-regression \
    --junit "$runs/$1.junit.xml" > "$runs/$1.compare.txt" 2>&1
  local rc=$?
  echo "compare base0 $1: exit $rc; $(grep -E '^gate: ' "$runs/$1.compare.txt" | tail -n 1)"
  return $rc
}
failed=0
if [ -z "$only" ]; then
  for i in 1 2 3 4 5; do gate "base$i" || failed=$((failed + 1)); done
  echo "A/A: $failed of 5 gate failures (expected 0)"
fi
failed=0
for i in 1 2 3 4 5; do gate "slow$i" || failed=$((failed + 1)); done
echo "knob $knob: $failed of 5 gate failures (expected 5)"
cat "$runs/slow1.compare.txt"
python3 - "$runs" <<'PY'
import json, statistics, sys
from pathlib import Path
runs = Path(sys.argv[1])
def durations(folder):
    manifest = json.loads((runs / folder / "gate" / "latest" / "manifest.json").read_text())
    return {t["name"]: t["results"][0]["metrics"].get("gpu__time_duration.sum") for t in manifest["targets"] if t["results"]}
base = [durations(f"base{i}") for i in range(6) if (runs / f"base{i}").is_dir()]
slow = [durations(f"slow{i}") for i in range(1, 6)]
for name in base[0]:
    b = [d[name]["value"] if isinstance(d[name], dict) else d[name] for d in base if d.get(name)]
    s = [d[name]["value"] if isinstance(d[name], dict) else d[name] for d in slow if d.get(name)]
    print(f"{name}: base median {statistics.median(b)} (spread {min(b)}..{max(b)}), knob median {statistics.median(s)}, ratio {statistics.median(s) / statistics.median(b):.3f}")
PY
[ -n "$only" ] && exit 0
start=$SECONDS
nc ab "$campaign" --pairs 3 --out "$runs/ab" > "$runs/ab.txt" 2>&1
echo "ab A/A calibration: exit $? in $((SECONDS - start)) s"
cat "$runs/ab.txt"
