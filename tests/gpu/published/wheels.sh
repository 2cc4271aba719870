#!/usr/bin/env bash
# The published libraries the workloads of this folder need, as CPython 3.12 x86-64 wheels in ./.whl of the
# repository (what ../shared/tools/device-wheels.sh fills), to carry to the GPU machine, which has torch, triton,
# numpy and pyyaml but no registry. Without dependencies: pip would bring torch. liger-kernel 0.6.4 is the last
# that patches transformers 4.x (0.8 asks for transformers 5). About 20 MB; with ncu-report (52 MB) beside them
# one command carries more than its 64 MiB: leave ncu-report out, ncucampaign then reads reports with the
# ncu_report module Nsight Compute ships (extras/python).
#
#   bash tests/gpu/published/wheels.sh && rm -f .whl/ncu_report-*.whl
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl transformers==4.57.6 liger-kernel==0.6.4 "tokenizers>=0.22,<=0.23" "huggingface-hub>=0.34,<1.0" \
  "safetensors>=0.4.3" regex tqdm filelock \
  fsspec packaging requests urllib3 idna certifi charset-normalizer
du -sh .whl
