#!/usr/bin/env bash
# The README pasted in order into a clean shell (`env -i bash`) from a fresh clone: every ```sh block, line by
# line, each command's exit code printed after it. Issue 65's must-show 4; run as
#   bash tests/readme_transcript.sh /path/to/fresh/clone > transcript.txt
set -u
clone="$(cd "$1" && pwd)"
script="$(mktemp)"
awk '/^```sh/{p=1;next} p&&/^```/{p=0;next} p' "$clone/README.md" | while IFS= read -r line; do
  [ -z "${line// }" ] && continue
  printf 'echo %q\n%s\necho "  -> exit $?"\n' "\$ $line" "$line"
done > "$script"
cd "$clone" && env -i HOME="$HOME" bash --noprofile --norc "$script"
