#!/usr/bin/env bash
# Profiler brackets from a start-up hook (docs/ncu-behaviour.md, "Profiler brackets from a hook"): does
# tests/gpu/bracket_shim.c, LD_PRELOAD'ed into an unchanged zoo workload, make
# `ncu --profile-from-start off` profile exactly the launches it brackets, and at what cost?
# Per workload: the application alone with the shim counting (its launches), under ncu listing every
# launch (what the shim misses), with nothing profiled, then with K launches bracketed (spread over the run); each line gives seconds, and whether
# the launches ncu profiled are, in order, the ones the shim bracketed (grid, block).
#   bash tests/gpu/bracket_check.sh OUT WORKLOAD_DIR [K]
set -u
out=${1:?OUT folder}; dir=${2:?a zoo workload folder}; k=${3:-11}
name=$(basename "$dir"); mkdir -p "$out"; o=$(mktemp -d); root=$PWD  # reports and logs: not kept
shim="$root/build/bracket_shim.so"
[ -f "$shim" ] || gcc -O2 -shared -fPIC -o "$shim" tests/gpu/bracket_shim.c -ldl -lpthread || exit 2
cmd=$(python3 -c "import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))['application']['command'])" "$dir/campaign.yaml")
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
cd "$dir" || exit 2
t=$(date +%s%N); BRACKET_LOG="$o/alone.log" LD_PRELOAD="$shim" $cmd > "$o/alone.out" 2>&1; code=$?
total=$(cat "$o/alone.log" 2> /dev/null | wc -l)
echo "$name: alone with the shim: exit $code, $(ms "$t") ms, $total launches counted"
t=$(date +%s%N); $cmd > "$o/plain.out" 2>&1; echo "$name: alone without it: exit $?, $(ms "$t") ms"
t=$(date +%s%N); ncu --config-file off --metrics launch__grid_size -f -o "$o/all" $cmd > "$o/all.out" 2>&1
echo "$name: under ncu, every launch listed: exit $?, $(ms "$t") ms, $(grep -c '^==PROF== Profiling' "$o/all.out") launches"
base=(--config-file off --nvtx --section SpeedOfLight)
t=$(date +%s%N); ncu "${base[@]}" -k nothing_matches_this -f -o "$o/none" $cmd > "$o/none.out" 2>&1
echo "$name: under ncu, nothing profiled: exit $?, $(ms "$t") ms"
[ "$total" -ge "$k" ] || { echo "$name: fewer launches counted than $k: nothing bracketed"; exit 0; }
picks=$(python3 -c "n, k = $total, $k; print(','.join(str(1 + (i * (n - 1)) // (k - 1)) for i in range(k)))")
t=$(date +%s%N)
BRACKET_PICK="$picks" BRACKET_LOG="$o/picked.log" LD_PRELOAD="$shim" \
  ncu "${base[@]}" --profile-from-start off -f -o "$o/picked" $cmd > "$o/picked.out" 2>&1
echo "$name: under ncu, $k bracketed ($picks): exit $?, $(ms "$t") ms"
cd "$root" || exit 2
python3 - "$o/picked.ncu-rep" "$o/picked.log" "$picks" <<'PY'
import subprocess, sys
from ncucampaign.plan.share.launches import parse_raw_csv
from ncucampaign.plan.share.union import import_csv_argv
report, log, picks = sys.argv[1], sys.argv[2], [int(p) for p in sys.argv[3].split(",")]
listed = parse_raw_csv(subprocess.run(import_csv_argv("ncu", report), capture_output=True, text=True).stdout)
lines = {int(line.split()[0]): line.split() for line in open(log)}
want = [(lines[p][2].strip("()"), lines[p][3].strip("()")) for p in picks if p in lines]
got = [(x.grid.replace(" ", "").strip("()"), x.block.replace(" ", "").strip("()")) for x in listed]
print(f"  profiled {len(got)}, bracketed {len(want)}; same launches in order: {got == want}")
for w, g in zip(want, got):
    if w != g:
        print("  first difference: bracketed", w, "profiled", g)
        break
PY
cp "$o/alone.log" "$out/$name-launches.log"; rm -rf "$o"
