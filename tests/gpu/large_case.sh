#!/bin/bash
# A large case on real ncu (issue 63): tests/gpu/zoo/train_step/large.yaml, 360 targets of a training step, run
# with its trace made now and again with it cached; then a few of its targets --no-share, which must hold the same
# launches; then `export` of two read-out members, whose reports ncu must list as the one launch each. Prints
# each run's exit, wall seconds, statuses, how targets were obtained, own seconds by phase and per member, and the
# ncu processes each run started (by kind, from a logging ncu).
#   bash tests/gpu/large_case.sh OUT
set -u
out=${1:?OUT folder}
command -v ncu > /dev/null || { echo "large_case.sh: no ncu on PATH (run it on a GPU machine)" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
campaign=$here/tests/gpu/zoo/train_step/large.yaml
mkdir -p "$out"; work=$(mktemp -d)
. "$here/tests/gpu/logging_ncu.sh"; logging_ncu "$work"
export PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH}
python3 -m compileall -q "$here/ncucampaign" > /dev/null  # as a pip install leaves it
sample=(launch_200 launch_300 launch_455 launch_456 launch_499 gemm_0 gemm_31 gemm_59)
pass() {  # pass LABEL OUTDIR ARGS...
  local label=$1 runs=$2; shift 2
  : > "$work/calls.jsonl"
  local start; start=$(date +%s%N)
  python3 -m ncucampaign run "$campaign" --out "$runs" "$@" > "$out/$label.log" 2>&1; local code=$?
  echo "== $label: exit $code, $(( ($(date +%s%N) - start) / 1000000 )) ms"
  grep -E "^(sharing|limit|own time|[0-9]+ targets:)" "$out/$label.log" | cut -c1-400
  cp "$work/calls.jsonl" "$out/$label.calls.jsonl"
  python3 "$here/tests/gpu/large_case_report.py" "$(ls -d "$runs"/*/latest)" "$work/calls.jsonl" | tee "$out/$label.txt"
}
pass first "$work/shared"
first=$(readlink -f "$(ls -d "$work"/shared/*/latest)")
pass cached "$work/shared"
cached=$(readlink -f "$(ls -d "$work"/shared/*/latest)")
pass alone "$work/alone" --no-share --only "${sample[@]}"
alone=$(readlink -f "$(ls -d "$work"/alone/*/latest)")
python3 "$here/tests/gpu/large_case_report.py" --same "$alone" "$first" "$cached"
start=$(date +%s%N)
python3 -m ncucampaign export "$first" --only launch_300 gemm_31 > "$out/export.log" 2>&1
echo "== export of 2 members: exit $?, $(( ($(date +%s%N) - start) / 1000000 )) ms"
python3 "$here/tests/gpu/large_case_report.py" --exported "$first" launch_300 gemm_31
gzip -c "$first/manifest.json" > "$out/first-manifest.json.gz"
rm -rf "$work"
