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
#
# Usage: bench/cpu/run.sh [LOOPC] (default build/loopc); REPS=5 by default;
# CASES, an extended regular expression, runs only the cases whose name
# matches it.
# With libopenblas-dev installed, matmul is also measured against OpenBLAS.
# LOOPC_COMMIT names the commit LOOPC was built from when it is not this
# checkout's HEAD (e.g. a clean export built apart from a busy work tree).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
loopc=${1:-$root/build/loopc}
reps=${REPS:-5}
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
echo "Compiler: $($cc --version | head -n1), ${cflags[*]}; $reps runs per kernel, median"
echo "Load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| kernel | sizes | loopc ms | C ms | C / loopc |"
echo "| --- | --- | ---: | ---: | ---: |"

for entry in "${cases[@]}"; do
  read_case "$entry"
  [[ -n ${CASES:-} && ! $name =~ $CASES ]] && continue

  loopc_ms=failed
  if output=$("$loopc" run "$root/$sample" "${kernel_args[@]}" --device cpu --repeat "$reps" \
    "${set_args[@]}" "${option_args[@]}" 2>&1); then
    loopc_ms=$(sed -n "s/.* ran on cpu in \([0-9.]*\) ms.*/\1/p" <<<"$output")
  else
    echo "run.sh: loopc failed on $sample: $output" >&2
  fi

  c_ms=failed
  if "$cc" "${cflags[@]}" -o "$work/$name" "$root/bench/cpu/$name.c" -lm; then
    # shellcheck disable=SC2086 # c_args is a list of sizes
    c_ms=$("$work/$name" $c_args "$reps" | sed -n 's/^\([0-9.]*\) ms.*/\1/p')
  fi

  ratio=-
  if [[ $loopc_ms =~ ^[0-9.]+$ && $c_ms =~ ^[0-9.]+$ ]]; then
    ratio=$(awk -v c="$c_ms" -v l="$loopc_ms" 'BEGIN { if (l > 0) printf "%.2f", c / l; else print "-" }')
  fi
  echo "| $name | $sizes | $loopc_ms | $c_ms | $ratio |"
  [[ $name == matmul ]] && matmul_loopc_ms=$loopc_ms matmul_c_args=$c_args matmul_sizes=$sizes
done

# The tuned peer for matmul, when libopenblas-dev is installed (its header
# and library both: another package may bring a cblas.h alone): the same
# sizes, in the same run, against the loopc time above.
if [[ -z ${matmul_loopc_ms:-} ]]; then
  : # matmul was not among CASES
elif "$cc" "${cflags[@]}" -o "$work/matmul_openblas" "$root/bench/cpu/matmul_openblas.c" \
  -lopenblas -lm 2>/dev/null; then
  # shellcheck disable=SC2086 # a list of sizes
  blas_ms=$(OPENBLAS_NUM_THREADS=$(nproc) "$work/matmul_openblas" $matmul_c_args "$reps" |
    sed -n 's/^\([0-9.]*\) ms.*/\1/p')
  ratio=-
  if [[ $matmul_loopc_ms =~ ^[0-9.]+$ && $blas_ms =~ ^[0-9.]+$ ]]; then
    ratio=$(awk -v b="$blas_ms" -v l="$matmul_loopc_ms" 'BEGIN { printf "%.2f", b / l }')
  fi
  echo
  echo "| kernel | sizes | loopc ms | OpenBLAS ms | OpenBLAS / loopc |"
  echo "| --- | --- | ---: | ---: | ---: |"
  echo "| matmul | $matmul_sizes | $matmul_loopc_ms | $blas_ms | $ratio |"
else
  echo
  echo "(OpenBLAS not found: install libopenblas-dev to measure matmul against it)"
fi

echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
