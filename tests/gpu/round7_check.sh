#!/usr/bin/env bash
# On a GPU machine with real ncu: what round 7 changed in how ncu is run, on a workload not written for it.
#   1. the zoo's randn_decode, shared then --no-share (bench.py zoo: same statuses, same launches per target);
#   2. the same workload exiting 3 after its work (a wrapper): the trace's report is used as a cut one is, so the
#      targets share instead of each running alone; application starts counted;
#   3. the run's own output redirected into the workload's folder: the next run takes the trace from the cache,
#      and a file added there is named when it is traced again.
# Usage: bash tests/gpu/round7_check.sh OUT
set -u
out=${1:?OUT folder}; mkdir -p "$out"
root=$(pwd)
[ -n "${SKIP_ZOO:-}" ] || timeout 230 python3 tests/benchmarks/bench.py zoo --only randn_decode --json "$out/zoo.json" > "$out/zoo.log" 2>&1
echo "zoo rc=$?"; tail -5 "$out/zoo.log"

work="$out/exits3"; mkdir -p "$work"; cp tests/gpu/zoo/randn_decode/workload.py "$work/"
cat > "$work/exits3.py" <<'PY'
import runpy, sys
sys.argv = ["workload.py", *sys.argv[1:]]
try:
    runpy.run_path("workload.py", run_name="__main__")
except SystemExit:  # the workload's own exit (0), replaced by this script's
    pass
sys.exit(3)  # after its work, as a script whose last step fails
PY
sed -e 's/command: python3 workload.py --steps 8/command: python3 exits3.py --steps 8/' \
    tests/gpu/zoo/randn_decode/campaign.yaml > "$work/campaign.yaml"
(cd "$work" && timeout 150 python3 -m ncucampaign run campaign.yaml > run.log 2>&1; echo "exits3 rc=$?")
grep -E "^sharing|^  alone|^[0-9]+ targets" "$work/run.log"
python3 - "$work" <<'PY'
import json, pathlib, sys
m = json.loads((pathlib.Path(sys.argv[1]) / "runs/zoo-randn_decode/latest/manifest.json").read_text())
own = [a for t in m["targets"] for a in t["attempts"] if not a["message"].startswith(("split", "read"))]
print("application starts:", sum(len(r["attempts"]) for r in m["shared_runs"]) + len(own))
print("obtained:", sorted({(t["obtained"] or {}).get("how") for t in m["targets"]}))
print("trace:", [(r["status"], r["message"][-80:]) for r in m["shared_runs"] if r["kind"] == "trace"])
PY

stamp="$out/stamp"; mkdir -p "$stamp"; cp tests/gpu/zoo/randn_decode/{workload.py,campaign.yaml} "$stamp/"
cd "$stamp"
for n in 1 2; do python3 -m ncucampaign run campaign.yaml > "run$n.log" 2>&1; echo "stamp run $n rc=$?"; grep -E "^sharing|traced again" "run$n.log"; done
echo "# notes" > notes.txt
python3 -m ncucampaign run campaign.yaml > run3.log 2>&1; echo "stamp run 3 rc=$?"; grep -E "^sharing|traced again" run3.log
cd "$root"
