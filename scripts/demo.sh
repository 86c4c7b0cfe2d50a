#!/usr/bin/env bash
# The main job: set up, build, and run samples/matmul.loop on the best device
# present (the GPU when there is one, else the CPU JIT), checked against the
# reference interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
build/loopc run samples/matmul.loop --set M=512 --set N=512 --set K=512 --check "$@"
