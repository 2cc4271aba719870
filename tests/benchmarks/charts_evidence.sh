#!/usr/bin/env bash
# Issue 24's evidence on a GPU machine (run from the repository root, ncu on PATH): campaigns/
# roofline.yaml run with its timing pass, what ncu itself prints for every report it wrote (details
# page and raw page, base units), and the findings ranked by application gain. Writes under $OUT.
set -uo pipefail
out=${OUT:-/tmp/charts-evidence}; mkdir -p "$out/details"
( cd campaigns && python3 -m ncucampaign run roofline.yaml --out "$out/runs" ) > "$out/run.txt" 2>&1
echo "run exit $?" >> "$out/run.txt"
run=$(readlink -f "$out/runs/roofline/latest"); echo "$run" > "$out/run_dir.txt"
for report in "$run"/reports/*.ncu-rep; do
  name=$(basename "$report" .ncu-rep)
  ncu --import "$report" --page details --print-details all --print-units base > "$out/details/$name.txt" 2>&1
  ncu --import "$report" --page raw --csv --print-units base > "$out/details/$name.raw.csv" 2>&1
done
python3 -m ncucampaign findings "$run" --top 3 > "$out/findings_top3.txt" 2>&1
python3 -m ncucampaign findings "$run" --format json > "$out/findings.json" 2>&1
python3 -m ncucampaign report "$run" > /dev/null 2>&1
find "$out/runs" \( -name "*trace*.ncu-rep" -o -name "*timing*.ncu-rep" \) -delete; rm -f "$out/runs/roofline/latest"
# the device tool brings back a few files: one archive
tar czf "$out/evidence.tgz" -C "$out" details runs && rm -rf "$out/details" "$out/runs"
du -sh "$out"/*
