#!/usr/bin/env bash
# On a GPU machine: NVTX ranges named like PyTorch's (`aten::linear`), as real ncu lists them and as
# each tracer sees them. A small workload launches kernels inside `step/aten::linear` and
# `step/aten::relu`; ncu's own listing of its report is printed raw and as the run reads it
# (plan/share/launches.py), then a campaign of four targets runs once per tracer (NCUCAMPAIGN_NSYS=off:
# ncu's; else Nsight Systems' where it can take the trace): every target must be split out of one
# shared run, none refused.
#
#   [NCUCAMPAIGN_NSYS_LIBRARY_PATH=dir] bash tests/gpu/colon_ranges.sh OUT
set -uo pipefail
out=${1:?OUT folder}
command -v ncu > /dev/null || { echo "colon_ranges.sh: no ncu on PATH (run it on a GPU machine)" >&2; exit 2; }
mkdir -p "$out/work"
cat > "$out/work/colon.py" <<'EOF'
import torch
x = torch.randn(256, 256, device="cuda")
w = torch.randn(256, 256, device="cuda")
for step in range(4):
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_push("aten::linear")
    y = x @ w
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("aten::relu")
    y = torch.relu(y)
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
EOF
cat > "$out/work/colon.yaml" <<'EOF'
version: 1
name: colon
application:
  command: python3 colon.py
defaults:
  sections: [SpeedOfLight]
  launch_count: 1
  timeout: 3m
targets:
  - name: first_step
    nvtx_include: "step/"
  - name: relu_{launch_skip}
    nvtx_include: "step/"
    kernel_name: regex:elementwise
    matrix:
      launch_skip: [1, 3]
  - name: any_2
    launch_skip: 2
EOF
cd "$out/work" || exit 2
ncu --nvtx --metrics gpu__time_duration.sum -f -o colon python3 colon.py > ncu.log 2>&1
echo "== ncu's raw listing, NVTX column of the first launches"
ncu --import colon.ncu-rep --page raw --csv --print-kernel-base function 2>&1 | python3 -c "
import csv, sys
rows = list(csv.DictReader(sys.stdin))
column = next(c for c in rows[0] if c.startswith('thread Domain'))
for row in rows[1:5]:
    print('  ', row['Kernel Name'][:40], '|', row[column].strip())
"
echo "== as the run reads it"
ncu --import colon.ncu-rep --page raw --csv --print-kernel-base function 2>&1 | python3 -c "
import sys
from ncucampaign.plan.share.launches import parse_raw_csv
for launch in parse_raw_csv(sys.stdin.read())[:4]:
    print('  ', launch.symbol[:40], launch.nvtx)
"
for tracer in off nsys; do
  echo "== run, tracer: $tracer"
  if [ "$tracer" = off ]; then export NCUCAMPAIGN_NSYS=off; else unset NCUCAMPAIGN_NSYS; fi
  python3 -m ncucampaign run colon.yaml --out "runs-$tracer" > "run-$tracer.log" 2>&1
  echo "  exit $?"
  grep -E "^(sharing|  alone|limit)" "run-$tracer.log" | sed "s/^/  /"
  python3 -c "
import json, pathlib
m = json.loads((pathlib.Path('runs-$tracer/colon/latest').resolve() / 'manifest.json').read_text())
for t in m['targets']:
    print('  ', t['name'], t['status'], (t.get('obtained') or {}).get('how'), [r['nvtx'] for r in t['results']])
print('   traces:', [(r['name'], r.get('tracer'), r['status']) for r in m['shared_runs'] if r['kind'] == 'trace'])
"
done
