#!/bin/bash
# Issue 33, must-show 3, on real ncu: a stray config.ncu-cfg beside the workload changes no result of a
# run (ncucampaign passes --config-file off), while ncu itself, run bare in that folder, does read it.
# On the GPU machine, from the repository root:  bash tests/gpu/config_file_check.sh "$OUT"
set -u
out=${1:?usage: config_file_check.sh OUTDIR}
root=$PWD
work=$(mktemp -d)
for folder in clean planted; do
  mkdir -p "$work/$folder"
  cat > "$work/$folder/camp.yaml" <<EOF
version: 1
name: cfg
application:
  command: python3 $root/campaigns/decode_workload.py --steps 3
defaults:
  sections: [SpeedOfLight]
  launch_count: 1
  timeout: 120
  retries: 0
targets:
  - name: first_rmsnorm
    kernel_name: rmsnorm_kernel
EOF
done
# NVIDIA's format (reference.md section 6): would move the window into decode_step and add a section
cat > "$work/planted/config.ncu-cfg" <<'EOF'
[Launch-and-attach]
; left behind by an earlier experiment
--launch-skip = 8
--section = SchedulerStats
EOF
(cd "$work/planted" && timeout 120 ncu --kernel-name rmsnorm_kernel --launch-count 1 --nvtx \
  python3 "$root/campaigns/decode_workload.py" --steps 3) > "$out/control.log" 2>&1
echo "control (bare ncu in the planted folder) exit $?" | tee -a "$out/summary.txt"
for folder in clean planted; do
  (cd "$work/$folder" && timeout 150 python3 -m ncucampaign run camp.yaml --no-share --out runs) > "$out/$folder.log" 2>&1
  echo "$folder run exit $?" | tee -a "$out/summary.txt"
  cp "$work/$folder/runs/cfg/latest/manifest.json" "$out/$folder.manifest.json" 2>/dev/null
done
python3 - "$out" <<'EOF' | tee -a "$out/summary.txt"
import json, re, sys
out = sys.argv[1]
log = open(f"{out}/control.log").read()
print("bare ncu read the file:", "Scheduler Statistics" in log, "| its kernel ran under decode_step:",
      bool(re.search(r"decode_step", log)))
seen = {}
for folder in ("clean", "planted"):
    target = json.load(open(f"{out}/{folder}.manifest.json"))["targets"][0]
    if not target["results"]:
        print(folder, target["status"], target["message"][:300])
        continue
    result = target["results"][0]
    seen[folder] = (result["kernel"], tuple(result["nvtx"]), tuple(result["grid"]), tuple(sorted(result["metrics"])))
    print(folder, target["status"], target["config_file"], target["rename_kernels"], result["nvtx"], len(result["metrics"]), "metrics")
print("planted result == clean result:", len(seen) == 2 and seen["clean"] == seen["planted"])
EOF
