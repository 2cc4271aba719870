# Sourced by the GPU scripts: `logging_ncu WORK` puts an ncu in WORK that logs each command line it is
# given to WORK/calls.jsonl (one JSON list a line), then is the real ncu, and makes it the runs' ncu.
# The log's path is in the wrapper, not the environment: the environment is part of the trace's key.
logging_ncu() {
  local work=$1
  cat > "$work/ncu" <<PY
#!/usr/bin/env python3
import json, os, sys
with open("$work/calls.jsonl", "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
os.execvp("ncu", ["ncu", *sys.argv[1:]])
PY
  chmod +x "$work/ncu"
  export NCUCAMPAIGN_NCU="$work/ncu"
}
