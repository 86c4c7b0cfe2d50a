#!/usr/bin/env bash
# Checks that the C baselines of run.sh and polybench.sh compute what their
# .loop programs compute: each baseline runs once at small odd sizes with
# BENCH_DUMP_DIR set, writing its inputs and outputs as .npy files; loopc then
# runs the program on the CPU JIT with those inputs (--in), and every output
# must match within a float tolerance (the two may order a reduction's
# additions differently).
#
# Usage: bench/cpu/check.sh [LOOPC] (default build/loopc). Exit 1 on a mismatch.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
loopc=${1:-$root/build/loopc}
if [[ ! -x $loopc ]]; then
  echo "check.sh: no loopc binary at $loopc (pass its path)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# name (bench/cpu/<name>.c) | program[:kernel] (in samples/, or a path from the
# root) | C arguments (sizes) | loopc --set values for scalar parameters
cases=(
  "matmul|matmul.loop|37 29 41|"
  "mv|mv.loop|53 37|"
  "mv_transposed|mv_transposed.loop:mv_transposed_via_linalg|53 37|"
  "dot|dot.loop|1001|"
  "sum_and_max|sum_max.loop:sum_and_max|1001|"
  "transpose|transpose.loop|37 29|"
  "conv2d_5x5|conv2d_5x5.loop|37 29|"
  "cnn_conv_same|cnn_conv.loop:cnn_conv_same|3 5 23 37 3|"
  "jacobi2d|jacobi2d.loop|37 3|steps=3"
  "softmax|softmax.loop|7 37|"
  "sqdist|sqdist.loop|37 29 11|"
  "nbody|nbody.loop|67|dt=0.01 softening=0.1"
  "histogram|histogram.loop|1001 7|B=7 lo=-1 hi=1"
  "prefix_sum|scan.loop|1001|"
  "launch|bench/cpu/launch.loop|67 3|steps=3"
  "jacobi1d|jacobi1d.loop|67 3|steps=3"
  "durbin|bench/cpu/durbin.loop|67|"
  "nussinov|bench/cpu/nussinov.loop|67|"
  "polybench/covariance|tests/programs/polybench/covariance.loop:covariance|37 29|"
  "polybench/trmm|tests/programs/polybench/trmm.loop:trmm|37 29|alpha=1.5"
  "polybench/lu|tests/programs/polybench/lu.loop:lu|37|"
  "polybench/trisolv|tests/programs/polybench/trisolv.loop:trisolv|37|"
  "polybench/mvt|tests/programs/polybench/mvt.loop:mvt|37|"
  "polybench/atax|tests/programs/polybench/atax.loop:atax|37 29|"
  "polybench/bicg|tests/programs/polybench/bicg.loop:bicg|37 29|"
  "polybench/cholesky|tests/programs/polybench/cholesky.loop:cholesky|37|"
  "polybench/correlation|tests/programs/polybench/correlation.loop:correlation|37 29|"
  "polybench/doitgen|tests/programs/polybench/doitgen.loop:doitgen|5 7 37|"
  "polybench/durbin|tests/programs/polybench/durbin.loop:durbin|37|"
  "polybench/gemm|tests/programs/polybench/gemm.loop:gemm|37 29 41|alpha=1.5 beta=1.2"
  "polybench/gemver|tests/programs/polybench/gemver.loop:gemver|37|alpha=1.5 beta=1.2"
  "polybench/gesummv|tests/programs/polybench/gesummv.loop:gesummv|37|alpha=1.5 beta=1.2"
  "polybench/gramschmidt|tests/programs/polybench/gramschmidt.loop:gramschmidt|37 29|"
  "polybench/k2mm|tests/programs/polybench/k2mm.loop:k2mm|37 29 41 31|alpha=1.5 beta=1.2"
  "polybench/k3mm|tests/programs/polybench/k3mm.loop:k3mm|37 29 41 31 23|"
  "polybench/ludcmp|tests/programs/polybench/ludcmp.loop:ludcmp|37|"
  "polybench/symm|tests/programs/polybench/symm.loop:symm|37 29|alpha=1.5 beta=1.2"
  "polybench/syr2k|tests/programs/polybench/syr2k.loop:syr2k|37 29|alpha=1.5 beta=1.2"
  "polybench/syrk|tests/programs/polybench/syrk.loop:syrk|37 29|alpha=1.5 beta=1.2"
)

# Max |expected - actual| / (1 + |expected|) over two .npy files of f32, i32
# or f64.
compare() {
  python3 - "$1" "$2" <<'PY'
import ast, struct, sys

def load(path):
    with open(path, "rb") as f:
        data = f.read()
    header_length = struct.unpack_from("<H", data, 8)[0]
    header = ast.literal_eval(data[10:10 + header_length].decode("latin1"))
    codes = {"<f4": "f", "<i4": "i", "<f8": "d"}
    assert header["descr"] in codes and not header["fortran_order"], header
    count = 1
    for extent in header["shape"]:
        count *= extent
    code = codes[header["descr"]]
    return header["shape"], struct.unpack_from("<%d%s" % (count, code), data, 10 + header_length)

expected_shape, expected = load(sys.argv[1])
actual_shape, actual = load(sys.argv[2])
if expected_shape != actual_shape:
    sys.exit("shape %s vs %s" % (expected_shape, actual_shape))
print(max((abs(e - a) / (1 + abs(e)) for e, a in zip(expected, actual)), default=0.0))
PY
}

status=0
for entry in "${cases[@]}"; do
  IFS='|' read -r name sample c_args values <<<"$entry"
  args=()
  if [[ $sample == *:* ]]; then
    args=(--kernel "${sample#*:}")
    sample=${sample%%:*}
  fi
  dir=$work/$name
  mkdir -p "$dir/in" "$dir/out" "$dir/loopc"
  gcc -O3 -march=native -fopenmp -o "$dir/baseline" "$root/bench/cpu/$name.c" -lm
  # shellcheck disable=SC2086 # c_args is a list of sizes
  BENCH_DUMP_DIR=$dir "$dir/baseline" $c_args 1 >/dev/null
  for value in $values; do args+=(--set "$value"); done
  for file in "$dir"/in/*.npy; do args+=(--in "$(basename "$file" .npy)=$file"); done
  for file in "$dir"/out/*.npy; do args+=(--out "$(basename "$file" .npy)=$dir/loopc/$(basename "$file")"); done
  [[ $sample == */* ]] || sample=samples/$sample
  if ! "$loopc" run "$root/$sample" --device cpu --quiet "${args[@]}"; then
    echo "$name: loopc failed"
    status=1
    continue
  fi
  for file in "$dir"/out/*.npy; do
    output=$(basename "$file" .npy)
    error=$(compare "$file" "$dir/loopc/$output.npy")
    if awk -v e="$error" 'BEGIN { exit !(e <= 1e-4) }'; then
      echo "$name.$output: matches (largest relative difference $error)"
    else
      echo "$name.$output: MISMATCH (largest relative difference $error)"
      status=1
    fi
  done
done
exit $status
