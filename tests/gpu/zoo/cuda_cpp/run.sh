#!/bin/sh
# Build main.cu once (again when it changes), then run it with these arguments: the zoo's plain CUDA
# C++ program, no Python. `-arch=native` builds for the GPU of this machine (nvcc 11.5 and later).
set -e
here=$(cd "$(dirname "$0")" && pwd)
app="$here/build/zoo_cuda"
if [ ! -x "$app" ] || [ "$here/main.cu" -nt "$app" ]; then
  mkdir -p "$here/build"
  nvcc -O2 -std=c++17 --extended-lambda -arch=native -o "$app.tmp" "$here/main.cu" -ldl \
    || nvcc -O2 -std=c++17 --extended-lambda -o "$app.tmp" "$here/main.cu" -ldl
  mv "$app.tmp" "$app"
fi
exec "$app" "$@"
