#!/usr/bin/env bash
# Builds loopc, its runtime and its tests with AddressSanitizer and
# UndefinedBehaviorSanitizer into build-sanitize/ and runs the test suite
# there: a memory error or undefined behaviour in the compiler fails the test
# that reaches it. Slower than scripts/test.sh (about 2x to build, 3x to run).
#   scripts/sanitize.sh [ctest arguments, e.g. -R differential]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLOOPC_SANITIZE=address,undefined >/dev/null
cmake --build build-sanitize -j "$(nproc)"
# The JIT'd code and LLVM are not instrumented; leaks at exit are not errors
# of a compiler run (LLVM keeps its globals alive on purpose).
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Tests that bound a run's time ("fast enough") are left out: instrumented
# code is several times slower by design.
ctest --test-dir build-sanitize -j "$(nproc)" --output-on-failure --timeout 1800 \
  -E "fast enough" "$@"
