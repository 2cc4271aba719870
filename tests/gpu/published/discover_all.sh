#!/bin/bash
# Each published workload (tests/gpu/zoo/W/W.py) as a user first meets it on the GPU machine: run bare (how long,
# that it works), then `ncucampaign discover -- python3 W.py` with discover's defaults; discover's table and
# suggestions (its run directory's targets.yaml and kernels.json) land in OUT/W/, to be made into the zoo campaign.
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
#   PYTHONPATH=$PWD:/tmp/site bash tests/gpu/published/discover_all.sh OUT [workload ...]
set -u
out=${1:?OUT folder}; shift
zoo=$(cd "$(dirname "$0")/../zoo" && pwd)
workloads=("$@"); [ ${#workloads[@]} -gt 0 ] || workloads=(llama_train llama_serve moe_train)
command -v ncu > /dev/null || { echo "discover_all.sh: no ncu on PATH (run it on a GPU machine)" >&2; exit 2; }
export PYTHONPATH=$zoo/../../..${PYTHONPATH:+:$PYTHONPATH}
python3 -c "import torch, triton, transformers; print('torch', torch.__version__, 'triton', triton.__version__, 'transformers', transformers.__version__)"
ncu --version | tail -1
for w in "${workloads[@]}"; do
  mkdir -p "$out/$w"
  start=$(date +%s%N)
  (cd "$zoo/$w" && timeout 90 python3 "$w.py") > "$out/$w/bare.log" 2>&1; code=$?
  echo "== $w bare: exit $code, $(( ($(date +%s%N) - start) / 1000000 )) ms: $(tail -1 "$out/$w/bare.log" | cut -c1-200)"
  start=$(date +%s%N)
  (cd "$zoo/$w" && timeout 150 python3 -m ncucampaign discover --top 12 --out "$out/$w/runs" -- python3 "$w.py") \
    > "$out/$w/discover.txt" 2>&1; code=$?
  echo "== $w discover: exit $code, $(( ($(date +%s%N) - start) / 1000000 )) ms"
  run=$(ls -d "$out/$w"/runs/discover/*/ 2>/dev/null | tail -1)
  [ -n "$run" ] && cp "$run"/targets.yaml "$run"/kernels.json "$out/$w/" 2>/dev/null
  [ -n "$run" ] && rm -rf "$run/reports"  # the report is large; what it says is in kernels.json
  head -c 6000 "$out/$w/discover.txt"; echo
done
