#!/usr/bin/env bash
# On a GPU machine with real ncu: a campaign whose script is not there. validate warns NCU013 at the
# command's line; run starts the application once (the discovery trace), says why once, and closes
# every target unstarted. Usage: bash tests/gpu/unstartable_check.sh OUT
set -u
out=${1:?OUT folder}; mkdir -p "$out/unstartable"; cd "$out/unstartable"
cat > camp.yaml <<'YAML'
version: 1
application:
  command: python3 nosuch_train.py --steps 2
defaults:
  sections: [SpeedOfLight]
  launch_count: 1
targets:
  - name: a
    kernel_name: regex:gemm
  - name: b
    nvtx_include: decode_step/
  - name: c
    kernel_name: regex:rmsnorm
YAML
python3 -m ncucampaign validate camp.yaml; echo "validate rc=$?"
python3 -m ncucampaign run camp.yaml > run.log 2>&1; echo "run rc=$?"
cat run.log
echo "can't-open-file lines: $(grep -c "can't open file" run.log)"
python3 - <<'PY'
import json, pathlib
m = json.loads((pathlib.Path("runs/camp/latest") / "manifest.json").read_text())
records = [*m["targets"], *m["shared_runs"]]
print("attempts in all:", sum(len(r["attempts"]) for r in records))
for t in m["targets"]:
    print(t["name"], t["status"], len(t["attempts"]), t["message"])
PY
