#!/usr/bin/env bash
# PolyBench programs at PolyBench's LARGE sizes: loopc's CPU JIT against the
# same programs in plain C (bench/cpu/polybench/<name>.c, written as the
# .loop files in tests/programs/polybench/ are), built twice: gcc -O3
# -march=native -fopenmp with the .loop's parfors as OpenMP parallel loops,
# and clang-19 -O3 -march=native with Polly (-mllvm -polly -mllvm
# -polly-parallel, and -disable-loop-idiom-all, below) on the sequential source, as Polly is used: it interchanges,
# tiles and parallelizes by itself. Medians of REPS runs each (loopc's with
# `loopc run --repeat`, the C's timed by the harness), the three one after
# the other per case; ratios are the C time over loopc's (above 1: loopc is
# faster). The Polly column needs clang-19 and libomp-19-dev
# (`scripts/setup.sh clang-19 libomp-19-dev`) and is left empty without them.
#
# All 21 programs of tests/programs/polybench/, each with its main kernel (the
# one named as the file). A parfor inside a sequential loop (atax, bicg,
# doitgen, durbin, gramschmidt, symm, trmm, the mirroring loops of covariance
# and correlation) is one OpenMP parallel region per iteration in the gcc
# build: on a loaded machine its fork and join, not the loop, can make most of
# that row's gcc time. Polly would dismiss k2mm's and k3mm's products but for
# -disable-loop-idiom-all (see the notes in their C files).
#
# Usage: bench/cpu/polybench.sh [LOOPC] (default build/loopc); REPS=5 by
# default; CASES, an extended regular expression, runs only matching cases.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
loopc=${1:-$root/build/loopc}
reps=${REPS:-5}
if [[ ! -x $loopc ]]; then
  echo "polybench.sh: no loopc binary at $loopc (pass its path)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# name | kernel | loopc --set values | C arguments (before REPS)
cases=(
  "covariance|covariance|M=1200 N=1400|1200 1400"
  "trmm|trmm|M=1000 N=1200 alpha=1.5|1000 1200"
  "lu|lu|N=2000|2000"
  "trisolv|trisolv|N=4000|4000"
  "mvt|mvt|N=4000|4000"
  "gemm|gemm|NI=1000 NJ=1100 NK=1200 alpha=1.5 beta=1.2|1000 1100 1200"
  "k2mm|k2mm|NI=800 NJ=900 NK=1100 NL=1200 alpha=1.5 beta=1.2|800 900 1100 1200"
  "k3mm|k3mm|NI=800 NJ=900 NK=1000 NL=1100 NM=1200|800 900 1000 1100 1200"
  "atax|atax|M=1900 N=2100|1900 2100"
  "bicg|bicg|M=1900 N=2100|1900 2100"
  "doitgen|doitgen|NR=150 NQ=140 NP=160|150 140 160"
  "gemver|gemver|N=2000 alpha=1.5 beta=1.2|2000"
  "gesummv|gesummv|N=1300 alpha=1.5 beta=1.2|1300"
  "symm|symm|M=1000 N=1200 alpha=1.5 beta=1.2|1000 1200"
  "syrk|syrk|M=1000 N=1200 alpha=1.5 beta=1.2|1000 1200"
  "syr2k|syr2k|M=1000 N=1200 alpha=1.5 beta=1.2|1000 1200"
  "cholesky|cholesky|N=2000|2000"
  "ludcmp|ludcmp|N=2000|2000"
  "durbin|durbin|N=2000|2000"
  "gramschmidt|gramschmidt|M=1000 N=1200|1000 1200"
  "correlation|correlation|M=1200 N=1400|1200 1400"
)

# -disable-loop-idiom-all: clang would turn the zeroing of 2mm's and 3mm's
# products into a memset Polly cannot bound, and Polly would then leave their
# nests alone (about 10x slower); without the idiom it optimizes them.
polly=(clang-19 -O3 -march=native -fopenmp -DBENCH_SERIAL_SOURCE -mllvm -polly -mllvm
  -polly-parallel -mllvm -disable-loop-idiom-all)
echo "Device: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), $(nproc) cores (nproc)"
echo "Date: $(date -u +%Y-%m-%d) · commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "loopc: bounds-checked (the default; bench/cpu/bounds_checks.sh measures what the checks cost)"
echo "$reps runs per kernel, median; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| kernel | sizes | loopc ms | gcc ms | Polly ms | gcc / loopc | Polly / loopc |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"

ratio() {
  if [[ $1 =~ ^[0-9.]+$ && $2 =~ ^[0-9.]+$ ]]; then
    awk -v c="$1" -v l="$2" 'BEGIN { if (l > 0) printf "%.2f", c / l; else print "-" }'
  else
    echo -
  fi
}

for entry in "${cases[@]}"; do
  IFS='|' read -r name kernel values c_args <<<"$entry"
  [[ -n ${CASES:-} && ! $name =~ $CASES ]] && continue
  set_args=()
  for value in $values; do set_args+=(--set "$value"); done
  loopc_ms=failed
  if output=$("$loopc" run "$root/tests/programs/polybench/$name.loop" --kernel "$kernel" \
    --device cpu --repeat "$reps" "${set_args[@]}" 2>&1); then
    loopc_ms=$(sed -n "s/.* ran on cpu in \([0-9.]*\) ms.*/\1/p" <<<"$output")
  else
    echo "polybench.sh: loopc failed on $name: $output" >&2
  fi
  source=$root/bench/cpu/polybench/$name.c
  gcc_ms=failed
  if gcc -O3 -march=native -fopenmp -o "$work/$name.gcc" "$source" -lm; then
    # shellcheck disable=SC2086 # a list of sizes
    gcc_ms=$("$work/$name.gcc" $c_args "$reps" | sed -n 's/^\([0-9.]*\) ms.*/\1/p')
  fi
  polly_ms=-
  if "${polly[@]}" -o "$work/$name.polly" "$source" -lm 2>/dev/null; then
    # shellcheck disable=SC2086 # a list of sizes
    polly_ms=$("$work/$name.polly" $c_args "$reps" | sed -n 's/^\([0-9.]*\) ms.*/\1/p')
  fi
  echo "| $name | $values | $loopc_ms | $gcc_ms | $polly_ms | $(ratio "$gcc_ms" "$loopc_ms") |" \
    "$(ratio "$polly_ms" "$loopc_ms") |"
done

# durbin's bound: its dot products alone, the chain of dependent multiply-adds
# that no compiler keeping the program's rounding may reorder.
if [[ -z ${CASES:-} || durbin =~ $CASES ]] &&
  gcc -O3 -march=native -fopenmp -o "$work/durbin_bound" "$root/bench/cpu/polybench/durbin_bound.c" -lm; then
  echo
  echo "durbin's dot products alone (bench/cpu/polybench/durbin_bound.c, gcc, N=2000):" \
    "$("$work/durbin_bound" 2000 "$reps" | sed -n 's/^\([0-9.]*\) ms.*/\1/p') ms"
fi
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
