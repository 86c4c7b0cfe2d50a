#!/usr/bin/env bash
# CPU JIT vs plain C: times each representative sample with `loopc run
# --device cpu --repeat REPS` (the median kernel time, compilation and input
# generation excluded) and the same kernel written as plain C in
# bench/cpu/<name>.c (gcc -O3 -march=native -fopenmp, parallel over the outer
# loop, median of REPS runs timed with omp_get_wtime), one after the other,
# and prints a markdown table. Ratio = C ms / loopc ms: above 1 means loopc is
# faster. Builds only the C baselines (in a temporary directory).
# The last cases are launch-bound: a host loop launching many small parfors
# (launch: one parfor of N points, 10000 times, against OpenMP's parallel
# loop; jacobi1d at N = 4000; durbin's 4000 steps of a dot product and two
# parfors) or reductions inside serial loops (nussinov); their C baselines
# are sequential, as one would write them at these sizes, but launch's, an
# OpenMP parallel loop per step (OpenMP's own launch cost).
# Each C baseline is also built as Polly uses it, the same file read as a
# sequential program (-fopenmp-simd ignores its parallel pragmas) by clang-19
# with Polly (-mllvm -polly -mllvm -polly-parallel: it tiles, vectorizes and
# parallelizes by itself), linked with libomp; the Polly column needs clang-19
# and libomp-19-dev (`scripts/setup.sh clang-19 libomp-19-dev`) and is "-"
# without them.
#
# Usage: bench/cpu/run.sh [LOOPC] (default build/loopc); REPS=5 by default;
# CASES, an extended regular expression, runs only the cases whose name
# matches it. ROUNDS=N (default 1) times each case N times, loopc, C and
# Polly in turn, and keeps each one's fastest median: on a machine whose
# speed comes and goes (a virtual machine's threads sharing a core for a
# while), a single round can catch one of them in a slow moment.
# With libopenblas-dev installed, matmul is also measured against OpenBLAS at
# three sizes (bench/cpu/openblas.sh).
# LOOPC_COMMIT names the commit LOOPC was built from when it is not this
# checkout's HEAD (e.g. a clean export built apart from a busy work tree).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
loopc=${1:-$root/build/loopc}
reps=${REPS:-5}
rounds=${ROUNDS:-1}
cc=${CC:-gcc}
cflags=(-O3 -march=native -fopenmp)

if [[ ! -x $loopc ]]; then
  echo "run.sh: no loopc binary at $loopc (pass its path)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The cases, shared with bounds_checks.sh.
# shellcheck source=bench/cpu/cases.sh
source "$root/bench/cpu/cases.sh"

cpu_model=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1)
echo "Device: ${cpu_model:-unknown CPU}, $(nproc) cores (nproc); $(free -g | awk '/^Mem:/ {print $2}') GiB memory"
if [[ -n ${LOOPC_COMMIT:-} ]]; then
  commit=$LOOPC_COMMIT
elif commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null); then
  git -C "$root" diff --quiet HEAD -- src || commit+=" (src modified)"
else
  commit=unknown
fi
echo "Date: $(date -u +%Y-%m-%d) · commit: $commit"
echo "loopc: bounds-checked (the default; bench/cpu/bounds_checks.sh measures what the checks cost)"
rounds_note=
((rounds > 1)) && rounds_note=", the fastest of $rounds alternating rounds"
echo "Compiler: $($cc --version | head -n1), ${cflags[*]}; $reps runs per kernel, median$rounds_note"
echo "Load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| kernel | sizes | loopc ms | C ms | Polly ms | C / loopc | Polly / loopc |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"

# Polly as bench/cpu/polybench.sh builds it, on the sequential reading of the
# source: compiled with the parallel pragmas ignored, linked with the OpenMP
# runtime (omp_get_wtime, and the parallel loops Polly makes).
polly_compile=(clang-19 -O3 -march=native -fopenmp-simd -mllvm -polly -mllvm -polly-parallel
  -mllvm -disable-loop-idiom-all)
build_polly() { # source, executable
  "${polly_compile[@]}" -c -o "$2.o" "$1" 2>/dev/null && clang-19 -fopenmp -o "$2" "$2.o" -lm 2>/dev/null
}

# The faster of two times, either of which may be a failure's word.
fastest() {
  if [[ $1 =~ ^[0-9.]+$ && $2 =~ ^[0-9.]+$ ]]; then
    awk -v a="$1" -v b="$2" 'BEGIN { print (b < a ? b : a) }'
  elif [[ $2 =~ ^[0-9.]+$ ]]; then
    echo "$2"
  else
    echo "$1"
  fi
}

# C ms over loopc ms, or "-" when either failed.
ratio() {
  if [[ $1 =~ ^[0-9.]+$ && $2 =~ ^[0-9.]+$ ]]; then
    awk -v c="$1" -v l="$2" 'BEGIN { if (l > 0) printf "%.2f", c / l; else print "-" }'
  else
    echo -
  fi
}

for entry in "${cases[@]}"; do
  read_case "$entry"
  [[ -n ${CASES:-} && ! $name =~ $CASES ]] && continue

  c_built=false polly_built=false
  "$cc" "${cflags[@]}" -o "$work/$name" "$root/bench/cpu/$name.c" -lm && c_built=true
  build_polly "$root/bench/cpu/$name.c" "$work/$name.polly" && polly_built=true
  loopc_ms=failed c_ms=failed polly_ms=-
  for ((round = 0; round < rounds; ++round)); do
    if output=$("$loopc" run "$root/$sample" "${kernel_args[@]}" --device cpu --repeat "$reps" \
      "${set_args[@]}" "${option_args[@]}" 2>&1); then
      loopc_ms=$(fastest "$loopc_ms" "$(sed -n "s/.* ran on cpu in \([0-9.]*\) ms.*/\1/p" <<<"$output")")
    else
      echo "run.sh: loopc failed on $sample: $output" >&2
    fi
    if $c_built; then
      # shellcheck disable=SC2086 # c_args is a list of sizes
      c_ms=$(fastest "$c_ms" "$("$work/$name" $c_args "$reps" | sed -n 's/^\([0-9.]*\) ms.*/\1/p')")
    fi
    if $polly_built; then
      # shellcheck disable=SC2086 # c_args is a list of sizes
      polly_ms=$(fastest "$polly_ms" \
        "$("$work/$name.polly" $c_args "$reps" | sed -n 's/^\([0-9.]*\) ms.*/\1/p')")
    fi
  done
  echo "| $name | $sizes | $loopc_ms | $c_ms | $polly_ms | $(ratio "$c_ms" "$loopc_ms") |" \
    "$(ratio "$polly_ms" "$loopc_ms") |"
done

# The tuned peer for matmul, OpenBLAS, at three sizes in alternating rounds:
# bench/cpu/openblas.sh, run after the table when libopenblas-dev is installed
# and matmul is among CASES.
if [[ -z ${CASES:-} || matmul =~ $CASES ]]; then
  echo
  if blas_table=$("$root/bench/cpu/openblas.sh" "$loopc" 2>/dev/null); then
    sed -n '/^|/p' <<<"$blas_table"
  else
    echo "(OpenBLAS not found: install libopenblas-dev to measure matmul against it)"
  fi
fi

echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
