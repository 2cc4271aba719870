#!/bin/bash
# Issue 43, must-shows 1 and 2, on real ncu: two git repositories of 6 commits each holding the zoo's
# decode workload (campaigns/decode_workload.py) and a campaign of five targets with 12 samples each
# (tests/gpu/gate.yaml's targets). In "knob", commit 4 sets the MLP's default width 25% wider
# (`--ffn-extra` 0 -> 0.25: the down projection's GEMM reads 25% more weight); in "plain", commit 4
# changes a comment. Every commit is run once, on a clean tree. Then:
#   - history of each repository: knob must name commit 4 for mlp_down_gemm alone, plain nothing;
#   - reference update from plain's commits 1-3, twice (the second must change no byte);
#   - compare --reference: plain's commit 6 (a run the reference was not made from) must pass, knob's
#     commit 4 must fail naming mlp_down_gemm; the reference edited to another GPU model or ncu version
#     must say "not comparable" (exit 4).
# On the GPU machine, from the repository root:  bash tests/gpu/history_check.sh "$OUT"
# It leaves $OUT/history.tgz (the repositories, manifests and logs; no reports) and the pages.
set -u
out=${1:?usage: history_check.sh OUTDIR}
work=/tmp/hist
rm -rf "$work" && mkdir -p "$work"
here=$PWD
nc() { python3 -m ncucampaign "$@"; }
log() { echo "$*" | tee -a "$out/history_check.txt"; }

write_campaign() {
  cat > "$1/history.yaml" <<'YAML'
# The decode loop's five kernel families, 12 samples each (history's runs want 8 or more).
version: 1
name: history
description: A decode loop's kernels across the commits of its repository.
application:
  command: python3 workload.py --steps 12
  cwd: .
defaults:
  metrics: [gpu__time_duration.sum, gpc__cycles_elapsed.max, gpc__cycles_elapsed.avg.per_second,
            launch__registers_per_thread]
  samples: 12
  cache_control: all
  clock_control: base
  timeout: 5m
  retries: 1
targets:
  - name: rmsnorm_layer
    kernel_name: rmsnorm_kernel
    nvtx_include: "layer]"
  - name: rmsnorm_mlp
    kernel_name: rmsnorm_kernel
    nvtx_include: "mlp]"
  - name: attention
    kernel_name: regex:.*(flash|fmha|sdpa|attention).*
    nvtx_include: "attention]"
  - name: mlp_down_gemm          # GEMMs in mlp alternate up, down: from the first down, 12 of each
    kernel_name: regex:nvjet
    nvtx_include: "mlp]"
    launch_skip: 1
    samples: 23
  - name: qkv_gemm               # GEMMs in attention alternate QKV, output: 12 QKV
    kernel_name: regex:nvjet
    nvtx_include: "attention]"
    samples: 23
YAML
}

commit() {  # repo message
  git -C "$1" add -A && git -C "$1" -c user.name=bench -c user.email=bench@example.com commit -qm "$2"
}

history_of() {  # name knob
  local repo=$work/$1 runs=$work/runs-$1
  mkdir -p "$repo"
  cp "${HISTORY_WORKLOAD:-campaigns/decode_workload.py}" "$repo/workload.py"  # the fake's app for a dry run
  write_campaign "$repo"
  echo "# decode" > "$repo/NOTES.md"
  git -C "$repo" init -q
  for c in 1 2 3 4 5 6; do
    case $c in
      1) commit "$repo" "1: the decode loop and its campaign" ;;
      4) if [ "$2" = knob ]; then
           sed -i 's/os.environ.get("DECODE_FFN_EXTRA", "0")/os.environ.get("DECODE_FFN_EXTRA", "0.25")/' "$repo/workload.py"
           grep -q '"DECODE_FFN_EXTRA", "0.25"' "$repo/workload.py" || { log "no knob in this workload: a comment"; echo "# wider" >> "$repo/workload.py"; }
           commit "$repo" "4: a 25% wider MLP"
         else
           echo "commit $c" >> "$repo/NOTES.md" && commit "$repo" "4: notes"
         fi ;;
      *) echo "commit $c" >> "$repo/NOTES.md" && commit "$repo" "$c: notes" ;;
    esac
    local start=$SECONDS
    nc run "$repo/history.yaml" --out "$runs" ${HISTORY_RUN_ARGS:-} > "$work/$1-c$c.log" 2>&1
    local rc=$?
    log "$1 commit $c ($(git -C "$repo" rev-parse --short HEAD)): run exit $rc in $((SECONDS - start)) s; $(tail -n 1 "$work/$1-c$c.log")"
    ln -sfn "$(ls -d "$runs"/history/2* | tail -n 1)" "$work/$1-c$c"
  done
  [ -z "$(git -C "$repo" status --porcelain)" ] && log "$1: tree clean after the runs" || log "$1: tree dirty: $(git -C "$repo" status --porcelain)"
}

history_of plain plain
history_of knob knob

for name in knob plain; do
  log "== history --runs-root (${name})"
  nc history --runs-root "$work/runs-$name/history" --html "$out/history-$name.html" --fail-on-regression \
    > "$work/history-$name.txt" 2>&1
  log "exit $?"; cat "$work/history-$name.txt" | tee -a "$out/history_check.txt"
  nc history --runs-root "$work/runs-$name/history" --format json > "$work/history-$name.json" 2>&1
done

log "== reference update from plain's commits 1-3, twice"
refs=$work/refs
nc reference update "$work/plain-c1" "$work/plain-c2" "$work/plain-c3" --to "$refs" > "$work/ref1.txt" 2>&1
log "exit $?"; cat "$work/ref1.txt" | tee -a "$out/history_check.txt"
sum1=$(sha256sum "$refs"/*.yaml)
nc reference update "$work/plain-c1" "$work/plain-c2" "$work/plain-c3" --to "$refs" > "$work/ref2.txt" 2>&1
log "exit $?"; cat "$work/ref2.txt" | tee -a "$out/history_check.txt"
sum2=$(sha256sum "$refs"/*.yaml)
[ "$sum1" = "$sum2" ] && log "second update: no byte changed ($sum2)" || log "second update CHANGED the file"

for run in plain-c6 knob-c4 knob-c6; do
  log "== compare $run --reference refs --fail-on-regression"
  nc compare "$work/$run" --reference "$refs" --fail-on-regression --junit "$work/$run.junit.xml" \
    > "$work/compare-$run.txt" 2>&1
  log "exit $?"; sed -n '/^verdicts/,$p' "$work/compare-$run.txt" | tee -a "$out/history_check.txt"
done

file=$(ls "$refs"/*.yaml | head -n 1)
for edit in "s/^gpu: .*/gpu: NVIDIA H100 80GB HBM3/" "s/^\(  *ncu: \).*/\1'2025.2.0.0'/"; do
  other=$work/refs-edited && rm -rf "$other" && mkdir -p "$other"
  sed "$edit" "$file" > "$other/$(basename "$file")"
  log "== compare plain-c6 --reference (edited: $edit)"
  diff "$file" "$other/$(basename "$file")" | tee -a "$out/history_check.txt"
  nc compare "$work/plain-c6" --reference "$other" --fail-on-regression > "$work/compare-edited.txt" 2>&1
  log "exit $?"; cat "$work/compare-edited.txt" | tee -a "$out/history_check.txt"
done
cp "$file" "$out/reference.yaml"
cd "$work" && tar czf "$out/history.tgz" --exclude='*.ncu-rep' --exclude='*.ncu-repz' . && cd "$here"
log "done"
