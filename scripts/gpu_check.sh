#!/usr/bin/env bash
# Runs every kernel of every sample on the GPU with --check (the reference
# interpreter compares every output) at moderate sizes, chosen odd so that the
# bounds guards of rounded-up grids are exercised, then the optimization
# variants the benchmark times, and prints a pass/fail table (kernel, sizes,
# result, GPU time). Then runs the runtime smoke tool and the embedding
# test's program (its functions on the GPU), the REPL's tutorial with its
# values kept on the GPU, and the Python package's check on PyTorch CUDA
# tensors when they were carried. Exits non-zero if anything
# fails.
#
# The checks run JOBS at a time (default: one per core), since the reference
# interpreter, not the GPU, takes most of the time: a GPU time in the table is
# a launch under that load, not a benchmark (bench/gpu/run.sh measures). Each
# run is stopped after CHECK_TIMEOUT seconds (default 180) and counts as a
# failure; no check is started DEADLINE seconds (default: none) after the
# start, and those left out are counted and make the script fail. DEVICE
# (default gpu) picks another engine, e.g. DEVICE=gpu-on-cpu to try the
# script on a machine without a GPU.
#
# Meant for the GPU machine, with the static binary built here by
# scripts/build-static.sh (see docs/gpu.md):
#   scripts/gpu_check.sh [LOOPC] [SMOKE] [PROGRAMS] [EMBEDDED]
# LOOPC defaults to build-static/loopc, SMOKE to build-static/runtime/loopc-runtime-smoke,
# PROGRAMS (a folder of generated programs, each checked on the GPU too) to
# build-static/random-programs, EMBEDDED (tests/embedding's program, built by
# tests/embedding/run.sh and copied) to build-static/embedding_check.
set -uo pipefail
cd "$(dirname "$0")/.."

loopc=${1:-build-static/loopc}
smoke=${2:-build-static/runtime/loopc-runtime-smoke}
programs=${3:-build-static/random-programs}
embedded=${4:-build-static/embedding_check}
device=${DEVICE:-gpu}
jobs_at_once=${JOBS:-$(nproc)}
check_timeout=${CHECK_TIMEOUT:-180}
deadline=${DEADLINE:-}
if [ ! -x "$loopc" ]; then
  echo "error: $loopc not found; build it with scripts/build-static.sh and carry it" >&2
  exit 2
fi

# Sizes and scalars per sample; each kernel gets the names its declaration uses.
declare -A sizes=(
  [cnn_conv]="Ic=8 Oc=16 H=67 W=61 K=3"
  [conv2d_11x11]="H=301 W=257"
  [conv2d_5x5]="H=301 W=257"
  [dot]="N=1000003"
  [gauss]="N=129"
  [gaussian_blur]="H=301 W=257"
  [histogram]="N=1000003 B=257 lo=-0.75 hi=0.75"
  [scan]="N=1000003 R=301 C=257"
  [jacobi1d]="N=100003 steps=10"
  [jacobi2d]="N=301 steps=5"
  [laplace]="H=301 W=257"
  [matmul]="M=257 N=263 K=129"
  [mv]="M=1001 N=999"
  [mv_transposed]="M=1001 N=999"
  [nbody]="N=1001 dt=0.01 softening=0.1"
  [reverse]="N=1000003"
  [row_stats]="R=257 C=1001"
  [softmax]="R=257 C=1001"
  [sqdist]="M=257 N=263 K=64"
  [sum_max]="N=1000003 threshold=0.5"
  [transpose]="M=1001 N=999"
)

# The text of kernel $2's declaration in file $1, up to its opening brace.
declaration() {
  awk -v name="$2" '
    $0 ~ "^kernel " name "\\(" { inside = 1 }
    inside { print; if ($0 ~ /\{/) exit }' "$1"
}

# Each check runs in the background and writes its row to its own file in
# $rows, numbered in the order started, and marks a failure with a file
# fail.N; the table is printed in that order once all have ended.
rows=$(mktemp -d)
trap 'rm -rf "$rows"' EXIT
started=0
not_started=0
in_background() {
  while (($(jobs -rp | wc -l) >= jobs_at_once)); do wait -n; done
  if [ -n "$deadline" ] && ((SECONDS >= deadline)); then
    not_started=$((not_started + 1))
    return
  fi
  local index
  index=$(printf '%05d' $started)
  ("$@" || touch "$rows/fail.$index") >"$rows/row.$index" 2>&1 &
  started=$((started + 1))
}

# Runs kernel $2 of sample $1 on the GPU with --check at the sizes above (or
# at $sizes_override when set) and prints its row, labelled $3; further
# arguments go to loopc. Fails when the check does.
sizes_override=""
check_kernel() {
  local sample=$1 kernel=$2 label=$3
  shift 3
  local file=samples/$sample.loop header shown="" sets=() output status time result
  header=$(declaration "$file" "$kernel")
  for pair in ${sizes_override:-${sizes[$sample]:-}}; do
    if grep -qw "${pair%%=*}" <<<"$header"; then
      sets+=(--set "$pair")
      shown+="$pair "
    fi
  done
  output=$(timeout -k 5 "$check_timeout" "$loopc" run "$file" --kernel "$kernel" \
    --device "$device" --check "${sets[@]}" "$@" 2>&1)
  status=$?
  time=$(sed -n "s/.*ran on .* in \([0-9.]* ms\).*/\1/p" <<<"$output")
  result=FAIL
  if [ $status -eq 0 ] && grep -q '^PASS' <<<"$output"; then
    result=PASS
  fi
  printf '%-60s %-30s %-6s %s\n' "$label" "$shown" "$result" "${time:--}"
  if [ $result = FAIL ]; then
    ((status == 124 || status == 137)) && echo "    stopped after ${check_timeout}s"
    sed 's/^/    /' <<<"$output" | tail -8
    return 1
  fi
}

# Runs generated program $1 with --check at the sizes its first line gives;
# prints a row only when it fails.
check_program() {
  local file=$1 sets=() output status
  for pair in $(sed -n '1s|^// sizes:||p' "$file"); do sets+=(--set "$pair"); done
  output=$(timeout -k 5 "$check_timeout" "$loopc" run "$file" --device "$device" --check \
    "${sets[@]}" 2>&1)
  status=$?
  if [ $status -eq 0 ] && grep -q '^PASS' <<<"$output"; then
    return 0
  fi
  printf '%-60s %-30s %-6s\n' "random:$(basename "$file" .loop)" "${sets[*]}" FAIL
  sed 's/^/    /' <<<"$output" | tail -8
  return 1
}

echo "checks on --device $device, $jobs_at_once at a time (times are launches under that load)"
printf '%-60s %-30s %-6s %s\n' "kernel" "sizes" "result" "time"
for file in samples/*.loop; do
  sample=$(basename "$file" .loop)
  for kernel in $(sed -n 's/^kernel \([A-Za-z_0-9]*\).*/\1/p' "$file"); do
    in_background check_kernel "$sample" "$kernel" "$sample:$kernel"
  done
done

# The other sizes and choices of the optimizations bench/gpu/run.sh times,
# so that no figure there comes from a kernel computing something else
# (matmul at 1793 x 1800: a grid large enough for its 8 x 8 tiles):
# sample | kernel | loopc options | sizes instead of the sample's above.
variants=(
  "matmul|matmul|--pass-param register_tile=8 --pass-param stage_length=16"
  "matmul|matmul|--pass-param register_tile=8 --pass-param stage_length=8"
  "matmul|matmul|--pass-param register_tile=2"
  "matmul|matmul|--skip-pass tile_registers"
  "matmul|matmul|--skip-pass stage_shared"
  "conv2d_5x5|conv2d_5x5|--pass-param register_tile=2"
  "conv2d_5x5|conv2d_5x5|--pass-param stage_min_reuse=2"
  "conv2d_11x11|conv2d_11x11|--pass-param stage_min_reuse=2"
  "transpose|transpose|--skip-pass stage_shared"
  "cnn_conv|cnn_conv_valid|--skip-pass specialize_sizes"
  "cnn_conv|cnn_conv_valid|--skip-pass stage_shared"
  "cnn_conv|cnn_conv_valid|--pass-param register_tile=8 --skip-pass stage_shared"
  "mv|mv|--skip-pass map_rows_to_blocks"
  "mv|mv||M=3 N=300007"
  "histogram|histogram|--skip-pass privatize_combines"
  "histogram|bin_stats|--skip-pass privatize_combines"
  "mv_transposed|mv_transposed_via_linalg|--skip-pass fuse_producers --skip-pass drop_overwritten_fills"
  "matmul|matmul|--unsafe"
  "histogram|histogram|--unsafe"
  "scan|prefix_sum|--unsafe"
  "softmax|softmax|--unsafe"
  "dot|dot|--unsafe"
  "conv2d_11x11|conv2d_11x11|--unsafe"
  "row_stats|row_stats|--skip-pass fuse_sibling_reductions"
  "sum_max|sum_and_max|--skip-pass fuse_sibling_reductions"
  "matmul|matmul|--pass-param copies_in_flight=8"
  "matmul|matmul|--pass-param copies_in_flight=8 --pass-param register_tile=8 --pass-param stage_length=16"
  "conv2d_5x5|conv2d_5x5|--pass-param copies_in_flight=4 --pass-param stage_min_reuse=2"
  "cnn_conv|cnn_conv_valid|--pass-param copies_in_flight=8"
  "sqdist|sqdist|--pass-param copies_in_flight=8"
  "matmul|matmul|--pass-param pipeline_depth=2"
  "matmul|matmul|--pass-param pipeline_depth=3"
  "matmul|matmul|--pass-param pipeline_depth=2 --pass-param register_tile=8"
  "matmul|matmul|--pass-param pipeline_depth=2|M=256 N=256 K=256"
  "matmul|matmul||M=1793 N=1800 K=17"
  "matmul|matmul|--pass-param unclamped_tiles=1"
  "matmul|matmul|--pass-param unclamped_tiles=1|M=1793 N=1800 K=17"
  "matmul|matmul|--pass-param unclamped_tiles=1 --pass-param register_tile=8 --pass-param pipeline_depth=3"
  "cnn_conv|cnn_conv_valid|--pass-param pipeline_depth=2"
  "cnn_conv|cnn_conv_valid|--pass-param pipeline_depth=3"
  "sqdist|sqdist|--pass-param pipeline_depth=2"
  "conv2d_5x5|conv2d_5x5|--pass-param pipeline_depth=2 --pass-param stage_min_reuse=2"
  "matmul|matmul|--pass-param block_x=64 --pass-param block_y=4|M=1793 N=1800 K=17"
  "matmul|matmul|--pass-param block_x=16 --pass-param block_y=16"
  "transpose|transpose|--pass-param block_x=64 --pass-param block_y=16"
  "cnn_conv|cnn_conv_valid|--pass-param block_x=64 --pass-param block_y=16"
  "softmax|softmax|--pass-param block_x=128"
)
for variant in "${variants[@]}"; do
  IFS='|' read -r sample kernel options sizes_override <<<"$variant"
  read -r -a option_args <<<"$options"
  in_background check_kernel "$sample" "$kernel" "$sample:$kernel ${options//--pass-param /}" \
    "${option_args[@]}"
done
sizes_override=""

# Generated programs exported by the random-program tests (see docs/gpu.md):
# each file's first line is `// sizes: NAME=VALUE ...`.
programs_from=$started
if [ -d "$programs" ]; then
  for file in "$programs"/*.loop; do
    in_background check_program "$file"
  done
fi
wait
cat "$rows"/row.*
failures=$(find "$rows" -name 'fail.*' | wc -l)
if ((not_started > 0)); then
  echo "$not_started check(s) not started: past the ${deadline}s deadline"
  failures=$((failures + not_started))
fi
if [ -d "$programs" ]; then
  program_failures=$(find "$rows" -name 'fail.*' | awk -F. -v from="$programs_from" \
    '$NF + 0 >= from' | wc -l)
  echo "generated programs from $programs: $((started - programs_from - program_failures)) passed," \
    "$program_failures failed"
fi

if [ -x "$smoke" ]; then
  echo
  echo "runtime smoke tool ($smoke):"
  if ! timeout -k 5 "$check_timeout" "$smoke"; then
    failures=$((failures + 1))
  fi
fi

# The program of tests/embedding, whose kernels.loop object holds GPU code:
# on the GPU its functions must agree with the references as on the CPU.
if [ -x "$embedded" ]; then
  echo
  echo "embedded kernels ($embedded, LOOPC_DEVICE=gpu):"
  if ! output=$(LOOPC_DEVICE=gpu timeout -k 5 "$check_timeout" "$embedded" 2>&1) ||
    ! grep -q "ran on the GPU" <<<"$output"; then
    failures=$((failures + 1))
  fi
  echo "$output"
fi
# 200 calls through host pointers, then through buffers, timed.
chain=$(dirname "$embedded")/embedding_chain
if [ -x "$chain" ]; then
  echo
  echo "embedded chain ($chain, LOOPC_DEVICE=gpu):"
  for n in 100003 16777216; do
    if ! LOOPC_DEVICE=gpu timeout -k 5 "$check_timeout" "$chain" "$n"; then
      failures=$((failures + 1))
    fi
  done
fi
# The example of docs/embedding.md: matmul twice with vectors, then buffers.
app=$(dirname "$embedded")/matmul_app
if [ -x "$app" ]; then
  echo
  for n in 1000 2048; do
    echo "embedding example ($app $n, LOOPC_DEVICE=gpu):"
    if ! LOOPC_DEVICE=gpu timeout -k 5 "$check_timeout" "$app" "$n"; then
      failures=$((failures + 1))
    fi
  done
fi
# The REPL's tutorial (docs/repl.md) on the GPU, its values kept in GPU
# memory between the calls: the transcript the docs show, values listed by
# :who as on the GPU.
tutorial=$(mktemp -d)
awk '/^```loopc-repl$/ { inside = 1; next } inside && /^```$/ { exit }
  inside && /^loop> / { print substr($0, 7) > "'"$tutorial"'/input"; next }
  inside && /^\.\.\.> / { print substr($0, 6) > "'"$tutorial"'/input"; next }
  inside { print > "'"$tutorial"'/expected" }' docs/repl.md
if [ "$device" = gpu ]; then # arrays are kept there, scalars on the host
  sed -E -i 's/^([^ ]+: [a-z0-9]+\[.*) \(host\)$/\1 (gpu)/' "$tutorial/expected"
fi
echo
echo "REPL tutorial on the GPU (values kept there):"
if timeout -k 5 "$check_timeout" "$loopc" repl --device "$device" <"$tutorial/input" >"$tutorial/output" 2>&1 &&
  diff "$tutorial/expected" "$tutorial/output"; then
  echo "  PASS"
else
  echo "  FAIL (above: expected, then what the session printed)"
  failures=$((failures + 1))
fi
rm -rf "$tutorial"

# Python: kernels on PyTorch CUDA tensors, without copies, when the Python
# package carried there (PYTHON_PACKAGE, default build/python) imports.
python_package=${PYTHON_PACKAGE:-build/python}
if PYTHONPATH=$python_package python3 -c "import loopc, torch" 2>/dev/null; then
  echo
  echo "Python on CUDA tensors ($python_package):"
  if ! PYTHONPATH=$python_package timeout -k 5 "$check_timeout" \
    python3 tests/python/gpu_torch_check.py samples; then
    failures=$((failures + 1))
  fi
fi

echo
if [ $failures -ne 0 ]; then
  echo "FAILED: $failures check(s)"
  exit 1
fi
echo "all GPU checks passed"
