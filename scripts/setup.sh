#!/usr/bin/env bash
# Installs the Debian packages loopc builds with, when they are missing.
# Safe to run again: it does nothing when everything is present.
set -euo pipefail

# Packages named on the command line are installed too (scripts/fuzz.sh adds clang).
# pybind11-dev, python3-dev, python3-numpy and python3-pytest: the Python package and its tests;
# python3-torch: the tests of PyTorch tensors passed by DLPack.
packages=(cmake ninja-build ccache g++ llvm-19-dev llvm-19-tools antlr4 libantlr4-runtime-dev
  libcli11-dev doctest-dev nlohmann-json3-dev libedit-dev zlib1g-dev libzstd-dev
  pybind11-dev python3-dev python3-numpy python3-pytest python3-torch "$@")

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
# The CUDA toolkit is optional: without it loopc builds and runs on the CPU
# engines, and --device gpu compiles every kernel but those calling math
# functions (libdevice). It is NVIDIA's, not Debian's, so it is not installed here.
if [ ! -f /usr/local/cuda/include/cuda.h ]; then
  echo "setup: no CUDA toolkit in /usr/local/cuda: loopc is built for the CPU engines; for GPU" \
    "math functions and ptxas's register reports, install the toolkit (elsewhere: configure" \
    "with -DLOOPC_CUDA_ROOT=DIR; see docs/gpu.md)"
fi
