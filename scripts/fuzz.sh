#!/usr/bin/env bash
# Fuzzes the compiler with libFuzzer: builds tests/fuzz/fuzz_compile.cpp and
# the compiler it drives with clang, AddressSanitizer, UndefinedBehaviorSanitizer
# and libFuzzer's coverage into build-fuzz/ (clang-19 and its runtime are
# installed when missing), then mutates a corpus seeded with the samples, the
# stdlib and the diagnostics' programs for FUZZ_SECONDS (default 300) on every
# core. An input that crashes, trips a sanitizer, fails an assertion or makes
# the compiler report an internal error is written to build-fuzz/artifacts/;
# once fixed, copy it to tests/fuzz/regressions/, which the test suite replays.
#   scripts/fuzz.sh [extra libFuzzer flags]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh clang-19 libclang-rt-19-dev
CC=clang-19 CXX=clang++-19 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLOOPC_SANITIZE=address,undefined,fuzzer-no-link -DLOOPC_FUZZ=ON >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_compile
corpus=build-fuzz/corpus
mkdir -p "$corpus" build-fuzz/artifacts
cp -n samples/*.loop stdlib/*.loop tests/diagnostics/*.loop "$corpus"/
find tests/fuzz/regressions -type f ! -name .keep -exec cp -n {} "$corpus"/ \;
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
jobs=$(nproc)
# Imports resolve from the samples' folder; -timeout catches hangs.
(cd samples && ../build-fuzz/tests/fuzz_compile -max_total_time="${FUZZ_SECONDS:-300}" \
  -timeout=20 -rss_limit_mb=4096 -max_len=4096 -dict=../tests/fuzz/loop.dict \
  -artifact_prefix=../build-fuzz/artifacts/ -fork="$jobs" "$@" ../"$corpus")
