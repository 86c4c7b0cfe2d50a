#!/bin/sh
# Installs loopc from a build tree into a scratch prefix, then builds and runs
# the project in this folder against that installed package, as a user would:
#   tests/embedding/run.sh BUILD_DIR SCRATCH_DIR
# Fails if any step fails, or if the program links LLVM.
set -eu
build=$(realpath "$1")
scratch=$2
here=$(dirname "$(realpath "$0")")
rm -rf "$scratch"
mkdir -p "$scratch"
scratch=$(realpath "$scratch")
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -S "$here" -B "$scratch/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/build"
if ldd "$scratch/build/embedding_check" | grep -i llvm; then
  echo "embedding_check links LLVM; embedded kernels must not need it" >&2
  exit 1
fi
"$scratch/build/embedding_check"
