# Sourced by trace_cost.sh and nsys_trace.sh: what they take from `plan` for a zoo workload.
# secs START: the seconds since START (date +%s%N), to a tenth.
secs() { python3 -c "import sys; print(f'{(int(sys.argv[2]) - int(sys.argv[1])) / 1e9:.1f}')" "$1" "$(date +%s%N)"; }
# zoo_trace WORKLOAD: sets dir (where the trace runs), ncu_cmd (the trace as `plan` prints it), app
# (the application's command) and union (the trace's kernel regex); returns 1 when plan prints no trace.
zoo_trace() {
  local trace
  trace=$(python3 -m ncucampaign plan "tests/gpu/zoo/$1/campaign.yaml" 2>/dev/null | sed -n 's/^#   the discovery trace ([^)]*): //p' | head -1)
  [ -n "$trace" ] || { echo "$1: no trace in plan's output"; return 1; }
  dir=${trace#cd }; dir=${dir%% && *}; ncu_cmd=${trace#* && }
  app=$(echo "$ncu_cmd" | sed 's/.* -f -o [^ ]* //')
  union=$(echo "$ncu_cmd" | sed -n "s/.*--kernel-name 'regex:\([^']*\)'.*/\1/p")
}
