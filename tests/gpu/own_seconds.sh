#!/bin/bash
# A run's own seconds by phase (issue 41): a campaign run with its trace made now, then CACHED more
# times with the trace cached; per run its exit, wall seconds and the manifest's own_seconds. With
# PROFILE=1 the last cached run runs under cProfile (OUT/cached.prof, its top functions printed; the main
# thread only), with SAMPLE=1 under tests/gpu/thread_sampler.py (OUT/samples.txt: every thread, sampled).
# Also how long Python takes to import what `run` needs (OUT/importtime.txt).
#   [PROFILE=1] bash tests/gpu/own_seconds.sh OUT [campaign] [cached runs]
set -u
out=${1:?OUT folder}; campaign=${2:-tests/gpu/zoo/decode/campaign.yaml}; cached=${3:-2}
command -v ncu > /dev/null || { echo "own_seconds.sh: no ncu on PATH (run it on a GPU machine)" >&2; exit 2; }
mkdir -p "$out"; work=$(mktemp -d)
python3 -m compileall -q ncucampaign > /dev/null  # as a pip install leaves it (the GPU machine sets PYTHONDONTWRITEBYTECODE)
python3 -X importtime -m ncucampaign run --help > /dev/null 2> "$out/importtime.txt"
for pass in $(seq 0 "$cached"); do
  label=$([ "$pass" = 0 ] && echo "trace first" || echo "cached $pass")
  profile=()
  [ "${PROFILE:-0}" = 1 ] && [ "$pass" = "$cached" ] && [ "$pass" != 0 ] && profile=(-m cProfile -o "$out/cached.prof")
  [ "${SAMPLE:-0}" = 1 ] && [ "$pass" = "$cached" ] && [ "$pass" != 0 ] && profile=(tests/gpu/thread_sampler.py "$out/samples.txt" --)
  start=$(date +%s%N)
  python3 "${profile[@]}" $([ "${profile[0]:-}" = tests/gpu/thread_sampler.py ] || echo -m ncucampaign) run "$campaign" --out "$work/runs" > "$out/run-$pass.log" 2>&1; code=$?
  echo "== $label: exit $code, $(( ($(date +%s%N) - start) / 1000000 )) ms${profile:+ (profiled)}"
  grep -E "^(sharing|limit):" "$out/run-$pass.log"
  python3 - "$(ls -d "$work"/runs/*/latest)" <<'PY'
import json, sys
own = json.load(open(sys.argv[1] + "/manifest.json")).get("own_seconds", {})
print(f"  own_seconds {sum(own.values()):.2f} s:", ", ".join(f"{k} {v:.2f}" for k, v in own.items()))
PY
done
if [ -f "$out/cached.prof" ]; then
  python3 -c "import pstats, sys; pstats.Stats(sys.argv[1]).sort_stats('tottime').print_stats(25)" "$out/cached.prof" | tail -35
fi
rm -rf "$work"
