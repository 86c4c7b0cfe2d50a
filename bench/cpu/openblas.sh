#!/usr/bin/env bash
# samples/matmul.loop on the CPU JIT against OpenBLAS's cblas_sgemm
# (bench/cpu/matmul_openblas.c, libopenblas-dev) at M = N = K = 512, 1024 and
# 2048, both on every core. The two alternate, ROUNDS times per size (loopc,
# then OpenBLAS, then loopc...), each the median of REPS runs, so that a
# change in the machine's load falls on both; the table gives every round's
# ratio and their median. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, when the
# environment sets them, would make OpenBLAS run another CPU's kernels: they
# are unset for its runs, which leaves it its own detection.
#
# Usage: bench/cpu/openblas.sh [LOOPC] (default build/loopc); REPS=21 and
# ROUNDS=3 by default (at 512 a product takes about 0.6 ms, and the medians of
# 5 runs of either moved by 20% from one process to the next); SIZES, a list,
# replaces "512 1024 2048".
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
loopc=${1:-$root/build/loopc}
reps=${REPS:-21}
rounds=${ROUNDS:-3}
read -r -a sizes <<<"${SIZES:-512 1024 2048}"
if [[ ! -x $loopc ]]; then
  echo "openblas.sh: no loopc binary at $loopc (pass its path)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! gcc -O3 -march=native -fopenmp -o "$work/matmul_openblas" "$root/bench/cpu/matmul_openblas.c" \
  -lopenblas -lm 2>/dev/null; then
  echo "openblas.sh: cannot build against OpenBLAS: install libopenblas-dev" >&2
  exit 2
fi

loopc_time() { # size
  "$loopc" run "$root/samples/matmul.loop" --device cpu --repeat "$reps" \
    --set M="$1" --set N="$1" --set K="$1" | sed -n 's/.* ran on cpu in \([0-9.]*\) ms.*/\1/p'
}
openblas_time() { # size
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS="$(nproc)" \
    "$work/matmul_openblas" "$1" "$1" "$1" "$reps" | sed -n 's/^\([0-9.]*\) ms.*/\1/p'
}

echo "Device: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), $(nproc) cores (nproc)"
echo "Date: $(date -u +%Y-%m-%d) · commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "OpenBLAS: $(dpkg-query -W -f='${Version}' libopenblas0 2>/dev/null || echo unknown version)," \
  "$(nproc) threads; loopc bounds-checked (the default)"
echo "$rounds alternating rounds per size, each the median of $reps runs; load average before:" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| size | loopc ms (rounds) | OpenBLAS ms (rounds) | OpenBLAS / loopc (rounds) | median ratio |"
echo "| --- | --- | --- | --- | ---: |"
for size in "${sizes[@]}"; do
  mine=() theirs=() ratios=()
  for ((round = 0; round < rounds; ++round)); do
    l=$(loopc_time "$size")
    b=$(openblas_time "$size")
    mine+=("$l") theirs+=("$b")
    ratios+=("$(awk -v b="$b" -v l="$l" 'BEGIN { printf "%.2f", b / l }')")
  done
  median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  echo "| $size | ${mine[*]} | ${theirs[*]} | ${ratios[*]} | $median |"
done
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
