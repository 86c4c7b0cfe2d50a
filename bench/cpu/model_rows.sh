#!/usr/bin/env bash
# Measures the rows the CPU performance model is calibrated against
# (tests/perf/cpu_measured.tsv): the samples and programs of run.sh and
# polybench.sh, and variants of some with a pass left out, each timed by
# `loopc run --device cpu --repeat REPS` (the median kernel time), and prints
# them in the table's format. Run it on the machine the named CPU model
# describes (`loopc explain --perf --target cpu --device-model NAME`), and
# probe the machine in the same quiet moment: the figures of `native` are
# kept in $XDG_CACHE_HOME/loopc/cpu-probe.json (else ~/.cache/loopc).
#
# Usage: bench/cpu/model_rows.sh [LOOPC] (default build/loopc); REPS=5 by
# default; CASES, an extended regular expression, measures only the rows
# whose name matches it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
loopc=${1:-$root/build/loopc}
reps=${REPS:-5}
if [[ ! -x $loopc ]]; then
  echo "model_rows.sh: no loopc binary at $loopc (pass its path)" >&2
  exit 2
fi
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)

# case | file | kernel | sizes | options
rows=(
  "matmul 1024|samples/matmul.loop|matmul|M=1024 N=1024 K=1024|"
  "matmul 512|samples/matmul.loop|matmul|M=512 N=512 K=512|"
  "mv|samples/mv.loop|mv|M=4096 N=4096|"
  "mv_transposed|samples/mv_transposed.loop|mv_transposed_via_linalg|M=4096 N=4096|"
  "dot|samples/dot.loop|dot|N=16777216|"
  "sum_and_max|samples/sum_max.loop|sum_and_max|N=16777216|"
  "transpose|samples/transpose.loop|transpose|M=4096 N=4096|"
  "conv2d_5x5|samples/conv2d_5x5.loop|conv2d_5x5|H=2048 W=2048|"
  "conv2d_5x5, one row a thread|samples/conv2d_5x5.loop|conv2d_5x5|H=2048 W=2048|--skip-pass tile_registers"
  "jacobi2d|samples/jacobi2d.loop|jacobi2d|N=4096 steps=10|"
  "softmax|samples/softmax.loop|softmax|R=4096 C=1024|"
  "sqdist|samples/sqdist.loop|sqdist|M=2048 N=2048 K=64|"
  "nbody|samples/nbody.loop|nbody|N=8192 dt=0.01 softening=0.1|"
  "histogram|samples/histogram.loop|histogram|N=16777216 B=256 lo=-1 hi=1|"
  "bin_stats|samples/histogram.loop|bin_stats|N=16777216 B=256|"
  "prefix_sum|samples/scan.loop|prefix_sum|N=16777216|"
  "launch 64|bench/cpu/launch.loop|launch|N=64 steps=10000|--skip-pass hoist_independent_parfors"
  "launch 4000|bench/cpu/launch.loop|launch|N=4000 steps=10000|--skip-pass hoist_independent_parfors"
  "jacobi1d|samples/jacobi1d.loop|jacobi1d|N=4000 steps=1000|"
  "durbin|bench/cpu/durbin.loop|durbin|N=4000|"
  "nussinov|bench/cpu/nussinov.loop|nussinov|N=1000|"
  "nussinov, pulled|bench/cpu/nussinov.loop|nussinov|N=1000|--skip-pass interchange_column_walks"
  "covariance|tests/programs/polybench/covariance.loop|covariance|M=1200 N=1400|"
  "covariance, columns|tests/programs/polybench/covariance.loop|covariance|M=1200 N=1400|--skip-pass interchange_column_walks"
  "trmm|tests/programs/polybench/trmm.loop|trmm|M=1000 N=1200 alpha=1.5|"
  "lu|tests/programs/polybench/lu.loop|lu|N=1000|--skip-pass jam_serial_chains"
  "lu, pulled|tests/programs/polybench/lu.loop|lu|N=1000|--skip-pass interchange_column_walks --skip-pass jam_serial_chains"
  "trisolv|tests/programs/polybench/trisolv.loop|trisolv|N=4000|"
  "mvt|tests/programs/polybench/mvt.loop|mvt|N=4000|"
  "gemm|tests/programs/polybench/gemm.loop|gemm|NI=1000 NJ=1100 NK=1200 alpha=1.5 beta=1.2|"
  "syrk|tests/programs/polybench/syrk.loop|syrk|M=1000 N=1200 alpha=1.5 beta=1.2|"
  "syrk, columns|tests/programs/polybench/syrk.loop|syrk|M=1000 N=1200 alpha=1.5 beta=1.2|--skip-pass transpose_column_reads"
  "syr2k|tests/programs/polybench/syr2k.loop|syr2k|M=1000 N=1200 alpha=1.5 beta=1.2|"
  # Serial chains run together or one at a time (jam_serial_chains), and
  # chains of parfor points run 4 at a time or as the lanes run them.
  "lu N=2000, chains together|tests/programs/polybench/lu.loop|lu|N=2000|"
  "lu N=2000, one chain at a time|tests/programs/polybench/lu.loop|lu|N=2000|--skip-pass jam_serial_chains"
  "cholesky, chains together|tests/programs/polybench/cholesky.loop|cholesky|N=2000|"
  "cholesky, one chain at a time|tests/programs/polybench/cholesky.loop|cholesky|N=2000|--skip-pass jam_serial_chains"
  "ludcmp, chains together|tests/programs/polybench/ludcmp.loop|ludcmp|N=2000|"
  "ludcmp, one chain at a time|tests/programs/polybench/ludcmp.loop|ludcmp|N=2000|--skip-pass jam_serial_chains"
  "trisolv, one chain at a time|tests/programs/polybench/trisolv.loop|trisolv|N=4000|--skip-pass jam_serial_chains"
  "atax, chains together|tests/programs/polybench/atax.loop|atax|M=1900 N=2100|"
  "atax, one chain at a time|tests/programs/polybench/atax.loop|atax|M=1900 N=2100|--skip-pass jam_serial_chains"
  "bicg, chains together|tests/programs/polybench/bicg.loop|bicg|M=1900 N=2100|"
  "bicg, one chain at a time|tests/programs/polybench/bicg.loop|bicg|M=1900 N=2100|--skip-pass jam_serial_chains"
  "gemver, chains together|tests/programs/polybench/gemver.loop|gemver|N=2000 alpha=1.5 beta=1.2|"
  "gemver, one chain at a time|tests/programs/polybench/gemver.loop|gemver|N=2000 alpha=1.5 beta=1.2|--skip-pass jam_serial_chains"
  "gesummv, chains together|tests/programs/polybench/gesummv.loop|gesummv|N=1300 alpha=1.5 beta=1.2|"
  "gesummv, one chain at a time|tests/programs/polybench/gesummv.loop|gesummv|N=1300 alpha=1.5 beta=1.2|--skip-pass jam_serial_chains"
  "mvt, one chain at a time|tests/programs/polybench/mvt.loop|mvt|N=4000|--skip-pass jam_serial_chains"
)

# Which CPU: a virtual machine's model name may hide its generation, which
# the family and model numbers and the L1 size tell.
cpu_field() { sed -n "s/^$1[[:space:]]*:[[:space:]]*//p" /proc/cpuinfo | head -n1; }
echo "# loopc run --device cpu --repeat $reps medians on $(cpu_field 'model name') (family $(cpu_field 'cpu family')," \
  "model $(cpu_field model), L1d $(getconf LEVEL1_DCACHE_SIZE) bytes a core), $(nproc) threads," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
echo "# case	file	kernel	sizes	options	measured ms	commit"
for entry in "${rows[@]}"; do
  IFS='|' read -r name file kernel sizes options <<<"$entry"
  [[ -n ${CASES:-} && ! $name =~ $CASES ]] && continue
  set_args=()
  for value in $sizes; do set_args+=(--set "$value"); done
  # shellcheck disable=SC2206 # a list of options
  option_args=($options)
  if output=$("$loopc" run "$root/$file" --kernel "$kernel" --device cpu --repeat "$reps" \
    "${set_args[@]}" "${option_args[@]}" 2>&1); then
    ms=$(sed -n "s/.* ran on cpu[^)]*)* in \([0-9.]*\) ms.*/\1/p" <<<"$output")
    # The rows say when they measured checked code (the default).
    [[ " $options " == *" --unsafe "* ]] || options="${options:+$options }--bounds-check"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$file" "$kernel" "$sizes" "$options" "$ms" "$commit"
  else
    echo "model_rows.sh: loopc failed on $name: $output" >&2
  fi
done
