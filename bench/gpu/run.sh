#!/usr/bin/env bash
# The whole GPU benchmark in one command, made to fit 10 minutes on a GPU
# machine: runs the peers' script (bench/anchors/gpu_anchors.py:
# torch, cuBLAS, cuDNN, Triton on this GPU) and then `loopc bench --json` on
# each sample at the sizes the peers use, and prints a markdown table joining
# the two (bench/gpu/report.py). Peer and loopc run in the same run, because
# only same-run ratios count on a shared machine.
#
# Usage: bench/gpu/run.sh [LOOPC]   (default build-static/loopc; docs/gpu.md)
# Exits 1 when a loopc case failed, timed out or was skipped (the table still
# has its row), 2 when LOOPC is missing.
# Environment:
#   OUT            also write everything (table.md, anchors.jsonl, the raw logs,
#                  loopc.tsv) to $OUT/bench-gpu/, a folder to bring back
#   LOOPC_COMMIT   the commit LOOPC was built from (the device's copy of the
#                  checkout has no .git); default: git HEAD here, else unknown
#   DEVICE=gpu     loopc's --device; DEVICE=cpu with SMOKE=1 exercises the
#                  script on a machine without a GPU
#   SMOKE=1        the same cases at small sizes (ratios are then left out)
#   REPS           timed runs per case (default 10; 2 with SMOKE=1)
#   ANCHORS        the peers' script (default bench/anchors/gpu_anchors.py);
#                  run with a time limit of ANCHORS_TIMEOUT seconds (240)
#   ANCHORS_JSONL  use this stored peer run instead of running the script
#   DEADLINE       seconds after the start past which no further loopc case is
#                  started (default 540); CASE_TIMEOUT caps each case (120)
#   CASES          an extended regular expression: only the cases whose name
#                  matches it run (a short device call); the others get no row
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
loopc=${1:-$root/build-static/loopc}
device=${DEVICE:-gpu}
smoke=${SMOKE:-0}
if [[ $smoke == 1 ]]; then reps=${REPS:-2}; else reps=${REPS:-10}; fi
anchors_script=${ANCHORS:-$root/bench/anchors/gpu_anchors.py}
anchors_timeout=${ANCHORS_TIMEOUT:-240}
deadline=${DEADLINE:-540}
case_timeout=${CASE_TIMEOUT:-120}
start=$SECONDS

if [[ ! -x $loopc ]]; then
  echo "run.sh: no loopc binary at $loopc (scripts/build-static.sh builds it; pass its path)" >&2
  exit 2
fi
loopc=$(realpath "$loopc")
if [[ -n ${OUT:-} ]]; then
  results=$OUT/bench-gpu
  mkdir -p "$results"
else
  results=$(mktemp -d)
  trap 'rm -rf "$results"' EXIT
fi

# name | sample | kernel | --set values | --set values with SMOKE=1 | peer
#   [| further loopc options]
# (sample: samples/SAMPLE.loop, or a path from the repository's root ending in
# .loop: a program of tests/programs)
# The peer names a family in report.py, which finds the peer's figure for the
# case's sizes in the anchors' output. Cases with `--skip-pass` measure what
# an optimization brings (the same case without it, in the same run), cases
# with `--pass-param` other sizes of one, cases with `--unsafe` what the bounds
# checks left in the default code cost (every other case runs checked, the
# default: an index not proven in range is checked). Full sizes: the anchors' sizes (2^28 =
# 268435456 elements, 1 GiB per f32 array; at most 3 GiB per case).
cases=(
  "dot|dot|dot|N=268435456|N=100003|torch_dot"
  "dot, unchecked|dot|dot|N=268435456|N=100003|torch_dot|--unsafe"
  "sum_and_max|sum_max|sum_and_max|N=268435456|N=100003|torch_sum_amax"
  "sum_and_max, unfused|sum_max|sum_and_max|N=268435456|N=100003|torch_sum_amax|--skip-pass fuse_sibling_reductions"
  "sum_and_max, halving trees|sum_max|sum_and_max|N=268435456|N=100003|torch_sum_amax|--skip-pass combine_in_warps"
  "reverse|reverse|reverse|N=268435456|N=100003|torch_flip"
  "transpose|transpose|transpose|M=8192 N=8192|M=301 N=257|torch_transpose"
  "transpose, no shared staging|transpose|transpose|M=8192 N=8192|M=301 N=257|torch_transpose|--skip-pass stage_shared"
  "mv|mv|mv|M=16384 N=16384|M=301 N=257|cublas_mv"
  "mv, thread per row|mv|mv|M=16384 N=16384|M=301 N=257|cublas_mv|--skip-pass map_rows_to_blocks"
  "mv, 4 long rows|mv|mv|M=4 N=67108864|M=3 N=100003|torch_mv4"
  "mv, 4 long rows, unchecked|mv|mv|M=4 N=67108864|M=3 N=100003|torch_mv4|--unsafe"
  "mv, 4 long rows, not split|mv|mv|M=4 N=67108864|M=3 N=100003|torch_mv4|--skip-pass split_reductions"
  "mv_transposed|mv_transposed|mv_transposed|M=16384 N=16384|M=301 N=257|cublas_tmv"
  "mv_transposed, unchecked|mv_transposed|mv_transposed|M=16384 N=16384|M=301 N=257|cublas_tmv|--unsafe"
  "mv_transposed via linalg (fused)|mv_transposed|mv_transposed_via_linalg|M=16384 N=16384|M=301 N=257|cublas_tmv"
  "mv_transposed via linalg, unfused|mv_transposed|mv_transposed_via_linalg|M=16384 N=16384|M=301 N=257|cublas_tmv|--skip-pass fuse_producers --skip-pass drop_overwritten_fills"
  "softmax|softmax|softmax|R=8192 C=8192|R=67 C=1001|torch_softmax"
  "softmax, thread per row|softmax|softmax|R=8192 C=8192|R=67 C=1001|torch_softmax|--skip-pass map_rows_to_blocks"
  "softmax, halving trees|softmax|softmax|R=8192 C=8192|R=67 C=1001|torch_softmax|--skip-pass combine_in_warps"
  "row_stats|row_stats|row_stats|R=8192 C=8192|R=67 C=1001|torch_var_mean"
  "row_stats, unfused|row_stats|row_stats|R=8192 C=8192|R=67 C=1001|torch_var_mean|--skip-pass fuse_sibling_reductions"
  "histogram, 256 bins|histogram|histogram|N=268435456 B=256 lo=-1 hi=1|N=100003 B=256 lo=-1 hi=1|torch_histc256"
  "histogram, 256 bins, global atomics|histogram|histogram|N=268435456 B=256 lo=-1 hi=1|N=100003 B=256 lo=-1 hi=1|torch_histc256|--skip-pass privatize_combines"
  "prefix_sum|scan|prefix_sum|N=268435456|N=100003|torch_cumsum"
  "prefix_sum, unchecked|scan|prefix_sum|N=268435456|N=100003|torch_cumsum|--unsafe"
  "histogram, 65536 bins|histogram|histogram|N=268435456 B=65536 lo=-1 hi=1|N=100003 B=65536 lo=-1 hi=1|torch_histc65536"
  "jacobi2d|jacobi2d|jacobi2d|N=8192 steps=1|N=301 steps=1|torch_jacobi"
  "matmul|matmul|matmul|M=1000 N=1000 K=1000|M=33 N=33 K=33|cublas_sgemm"
  "matmul|matmul|matmul|M=1024 N=1024 K=1024|M=33 N=33 K=33|cublas_sgemm"
  "matmul, one tile for every block|matmul|matmul|M=1000 N=1000 K=1000|M=33 N=33 K=33|cublas_sgemm|--pass-param unclamped_tiles=1"
  "matmul, one tile for every block|matmul|matmul|M=2048 N=2048 K=2048|M=64 N=64 K=64|cublas_sgemm,triton_sgemm|--pass-param unclamped_tiles=1"
  "matmul, one tile for every block|matmul|matmul|M=4096 N=4096 K=4096|M=97 N=97 K=97|cublas_sgemm,triton_sgemm|--pass-param unclamped_tiles=1"
  "matmul|matmul|matmul|M=2048 N=2048 K=2048|M=64 N=64 K=64|cublas_sgemm,triton_sgemm"
  "matmul, no register tiles|matmul|matmul|M=2048 N=2048 K=2048|M=64 N=64 K=64|cublas_sgemm,triton_sgemm|--skip-pass tile_registers"
  "matmul, no shared staging|matmul|matmul|M=2048 N=2048 K=2048|M=64 N=64 K=64|cublas_sgemm,triton_sgemm|--skip-pass stage_shared"
  "matmul, 8 x 8 tiles, 16-k stages|matmul|matmul|M=2048 N=2048 K=2048|M=64 N=64 K=64|cublas_sgemm,triton_sgemm|--pass-param register_tile=8 --pass-param stage_length=16"
  "matmul, 8 x 8 tiles, 8-k stages|matmul|matmul|M=2048 N=2048 K=2048|M=64 N=64 K=64|cublas_sgemm,triton_sgemm|--pass-param register_tile=8 --pass-param stage_length=8"
  "matmul, 2 x 2 tiles|matmul|matmul|M=2048 N=2048 K=2048|M=64 N=64 K=64|cublas_sgemm,triton_sgemm|--pass-param register_tile=2"
  "matmul, copies 8 in flight|matmul|matmul|M=1000 N=1000 K=1000|M=33 N=33 K=33|cublas_sgemm|--pass-param copies_in_flight=8"
  "matmul, copies 8 in flight|matmul|matmul|M=2048 N=2048 K=2048|M=64 N=64 K=64|cublas_sgemm,triton_sgemm|--pass-param copies_in_flight=8"
  "matmul, copies 8 in flight, 8 x 8 tiles, 16-k stages|matmul|matmul|M=2048 N=2048 K=2048|M=64 N=64 K=64|cublas_sgemm,triton_sgemm|--pass-param copies_in_flight=8 --pass-param register_tile=8 --pass-param stage_length=16"
  "matmul, 4 x 4 tiles|matmul|matmul|M=1000 N=1000 K=1000|M=33 N=33 K=33|cublas_sgemm|--pass-param register_tile=4"
  "matmul, 8 x 8 tiles|matmul|matmul|M=1000 N=1000 K=1000|M=33 N=33 K=33|cublas_sgemm|--pass-param register_tile=8"
  "matmul, 4 x 4 tiles|matmul|matmul|M=2048 N=2048 K=2048|M=64 N=64 K=64|cublas_sgemm,triton_sgemm|--pass-param register_tile=4"
  "matmul, 3 stages in flight|matmul|matmul|M=2048 N=2048 K=2048|M=64 N=64 K=64|cublas_sgemm,triton_sgemm|--pass-param pipeline_depth=3"
  "matmul, 2 stages in flight, 8 x 8 tiles|matmul|matmul|M=2048 N=2048 K=2048|M=64 N=64 K=64|cublas_sgemm,triton_sgemm|--pass-param pipeline_depth=2 --pass-param register_tile=8"
  "matmul|matmul|matmul|M=4096 N=4096 K=4096|M=97 N=97 K=97|cublas_sgemm,triton_sgemm"
  "matmul, 4 x 4 tiles|matmul|matmul|M=4096 N=4096 K=4096|M=97 N=97 K=97|cublas_sgemm,triton_sgemm|--pass-param register_tile=4"
  "matmul, 2 stages in flight, 8 x 8 tiles|matmul|matmul|M=4096 N=4096 K=4096|M=97 N=97 K=97|cublas_sgemm,triton_sgemm|--pass-param pipeline_depth=2 --pass-param register_tile=8"
  "matmul, 8 x 8 tiles, 16-k stages|matmul|matmul|M=4096 N=4096 K=4096|M=97 N=97 K=97|cublas_sgemm,triton_sgemm|--pass-param register_tile=8 --pass-param stage_length=16"
  "matmul, copies 8 in flight|matmul|matmul|M=4096 N=4096 K=4096|M=97 N=97 K=97|cublas_sgemm,triton_sgemm|--pass-param copies_in_flight=8"
  "conv2d_5x5|conv2d_5x5|conv2d_5x5|H=8192 W=8192|H=301 W=257|cudnn_conv1"
  "conv2d_5x5, no register tiles|conv2d_5x5|conv2d_5x5|H=8192 W=8192|H=301 W=257|cudnn_conv1|--skip-pass tile_registers"
  "conv2d_5x5, staged (stage_min_reuse=2)|conv2d_5x5|conv2d_5x5|H=8192 W=8192|H=301 W=257|cudnn_conv1|--pass-param stage_min_reuse=2"
  "conv2d_5x5, staged, copies 4 in flight|conv2d_5x5|conv2d_5x5|H=8192 W=8192|H=301 W=257|cudnn_conv1|--pass-param stage_min_reuse=2 --pass-param copies_in_flight=4"
  "conv2d_5x5, 2 x 2 tiles|conv2d_5x5|conv2d_5x5|H=8192 W=8192|H=301 W=257|cudnn_conv1|--pass-param register_tile=2"
  "conv2d_11x11|conv2d_11x11|conv2d_11x11|H=8192 W=8192|H=301 W=257|cudnn_conv1"
  "conv2d_11x11, unchecked|conv2d_11x11|conv2d_11x11|H=8192 W=8192|H=301 W=257|cudnn_conv1|--unsafe"
  "conv2d_11x11, staged (stage_min_reuse=2)|conv2d_11x11|conv2d_11x11|H=8192 W=8192|H=301 W=257|cudnn_conv1|--pass-param stage_min_reuse=2"
  "cnn_conv|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=3|Ic=4 Oc=4 H=35 W=35 K=3|cudnn_conv64"
  "cnn_conv, no register tiles|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=3|Ic=4 Oc=4 H=35 W=35 K=3|cudnn_conv64|--skip-pass tile_registers"
  "cnn_conv, no size specialization|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=3|Ic=4 Oc=4 H=35 W=35 K=3|cudnn_conv64|--skip-pass specialize_sizes"
  "cnn_conv, no shared staging|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=3|Ic=4 Oc=4 H=35 W=35 K=3|cudnn_conv64|--skip-pass stage_shared"
  "cnn_conv, 8 x 8 tiles, no shared staging|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=3|Ic=4 Oc=4 H=35 W=35 K=3|cudnn_conv64|--pass-param register_tile=8 --skip-pass stage_shared"
  "cnn_conv, copies 8 in flight|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=3|Ic=4 Oc=4 H=35 W=35 K=3|cudnn_conv64|--pass-param copies_in_flight=8"
  "cnn_conv, 2 stages in flight|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=3|Ic=4 Oc=4 H=35 W=35 K=3|cudnn_conv64|--pass-param pipeline_depth=2"
  "cnn_conv|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=5|Ic=4 Oc=4 H=35 W=35 K=5|cudnn_conv64"
  "cnn_conv, padded|cnn_conv|cnn_conv_same|Ic=64 Oc=64 H=256 W=256 K=3|Ic=4 Oc=4 H=35 W=35 K=3|cudnn_conv64_same"
  "cnn_conv, padded, one nest|cnn_conv|cnn_conv_same|Ic=64 Oc=64 H=256 W=256 K=3|Ic=4 Oc=4 H=35 W=35 K=3|cudnn_conv64_same|--skip-pass partition_borders"
  "cnn_conv, padded|cnn_conv|cnn_conv_same|Ic=64 Oc=64 H=256 W=256 K=5|Ic=4 Oc=4 H=35 W=35 K=5|cudnn_conv64_same"
  "cnn_conv, padded|cnn_conv|cnn_conv_same|Ic=64 Oc=64 H=1024 W=1024 K=3|Ic=4 Oc=4 H=35 W=35 K=3|cudnn_conv64_same"
  "cnn_conv, padded|cnn_conv|cnn_conv_same|Ic=64 Oc=64 H=112 W=112 K=3|Ic=4 Oc=4 H=35 W=35 K=3|cudnn_conv64_same"
  "cnn_conv, padded, split below the threshold|cnn_conv|cnn_conv_same|Ic=64 Oc=64 H=112 W=112 K=3|Ic=4 Oc=4 H=35 W=35 K=3|cudnn_conv64_same|--pass-param border_min_points=0"
  "cnn_conv, 2 stages in flight|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=5|Ic=4 Oc=4 H=35 W=35 K=5|cudnn_conv64|--pass-param pipeline_depth=2"
  "cnn_conv, copies 8 in flight|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=5|Ic=4 Oc=4 H=35 W=35 K=5|cudnn_conv64|--pass-param copies_in_flight=8"
  "cnn_conv|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=1024 W=1024 K=3|Ic=4 Oc=4 H=67 W=67 K=3|cudnn_conv64"
  "cnn_conv, copies 8 in flight|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=1024 W=1024 K=3|Ic=4 Oc=4 H=67 W=67 K=3|cudnn_conv64|--pass-param copies_in_flight=8"
  "cnn_conv|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=1024 W=1024 K=5|Ic=4 Oc=4 H=67 W=67 K=5|cudnn_conv64"
  "cnn_conv|cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=2048 W=2048 K=5|Ic=4 Oc=4 H=99 W=99 K=5|cudnn_conv64"
  "attention block (layer norm, projections, causal softmax attention)|tests/programs/science/attn.loop|block|T=1024 D=768 NH=12 HD=64|T=17 D=48 NH=12 HD=4|torch_attention_block"
)

if [[ -n ${LOOPC_COMMIT:-} ]]; then
  commit=$LOOPC_COMMIT
elif commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null); then
  git -C "$root" diff --quiet HEAD -- src runtime || commit+=" (src modified)"
else
  commit=unknown
fi
if [[ $device == gpu ]] && command -v nvidia-smi >/dev/null; then
  device_name=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1)
  device_name="${device_name%%,*} (driver${device_name#*,})"
else
  device_name="$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), $(nproc) cores"
fi

# 1. The peers, first, so that a slow loopc case cannot crowd them out.
anchors_source=
if [[ -n ${ANCHORS_JSONL:-} ]]; then
  cp "$ANCHORS_JSONL" "$results/anchors.jsonl"
  anchors_source="stored run $(basename "$ANCHORS_JSONL") (not this run)"
elif [[ $device != gpu ]]; then
  : >"$results/anchors.jsonl"
  anchors_source="none (DEVICE=$device; set ANCHORS_JSONL to join a stored run)"
elif [[ ! -f $anchors_script ]]; then
  : >"$results/anchors.jsonl"
  anchors_source="none ($anchors_script missing: copy /work/shared/anchors to bench/anchors and carry it)"
  echo "run.sh: $anchors_script not found; the table will have no peer figures" >&2
else
  echo "run.sh: running $anchors_script (limit ${anchors_timeout}s)" >&2
  anchors_start=$SECONDS
  timeout -k 10 "$anchors_timeout" python3 "$anchors_script" >"$results/anchors.log" 2>&1
  anchors_status=$?
  # The script also prints a SUMMARY of Python reprs; keep the JSON lines.
  grep '^{"' "$results/anchors.log" >"$results/anchors.jsonl"
  # The peers the anchors do not measure (torch.cumsum, torch.histc), same run.
  timeout -k 10 120 python3 "$root/bench/gpu/peers.py" >"$results/peers.log" 2>&1
  peers_status=$?
  grep '^{"' "$results/peers.log" >>"$results/anchors.jsonl"
  anchors_source="$(basename "$anchors_script") and peers.py in this run ($((SECONDS - anchors_start)) s, exit $anchors_status and $peers_status)"
  echo "run.sh: anchors: $anchors_source" >&2
fi

# 2. loopc, one case at a time; a line per case in loopc.tsv for report.py:
# name, sample:kernel, sets, peer, status, wall seconds, loopc's JSON or error.
tsv=$results/loopc.tsv
: >"$tsv"
: >"$results/loopc.log"
for entry in "${cases[@]}"; do
  IFS='|' read -r name sample kernel full_values smoke_values peer options <<<"$entry"
  [[ -n ${CASES:-} && ! $name =~ $CASES ]] && continue
  read -r -a option_args <<<"$options"
  values=$full_values
  [[ $smoke == 1 ]] && values=$smoke_values
  set_args=()
  for value in $values; do set_args+=(--set "$value"); done

  remaining=$((deadline - (SECONDS - start)))
  limit=$((remaining < case_timeout ? remaining : case_timeout))
  case_start=$SECONDS
  if ((limit < 5)); then
    status=skipped
    payload="not started: past the ${deadline}s deadline"
  else
    file=samples/$sample.loop
    [[ $sample == *.loop ]] && file=$sample
    command=("$loopc" bench "$file" --kernel "$kernel" --device "$device"
      --repeat "$reps" --json "${set_args[@]}" "${option_args[@]}")
    echo "run.sh: ${command[*]}" >&2
    output=$(cd "$root" && timeout -k 5 "$limit" "${command[@]}" 2>"$results/case.err")
    code=$?
    { echo "== ${command[*]} (exit $code)"; cat "$results/case.err"; } >>"$results/loopc.log"
    if ((code == 0)) && [[ $output == '{'* ]]; then
      status=ok
      payload=$output
    elif ((code == 124 || code == 137)); then
      status=timeout
      payload="stopped after ${limit}s"
    else
      status=failed
      payload=$(grep -v '^[[:space:]]*$' "$results/case.err" | tail -n1)
      payload=${payload:-exit $code}
    fi
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$sample:$kernel" "$values" "$peer" "$status" \
    "$((SECONDS - case_start))" "${payload//$'\t'/ }" >>"$tsv"
done
rm -f "$results/case.err"

# 3. The table.
python3 "$root/bench/gpu/report.py" --loopc "$tsv" --anchors "$results/anchors.jsonl" \
  --device-name "$device_name" --commit "$commit" --date "$(date -u +%Y-%m-%d)" \
  --anchors-source "$anchors_source" --repeat "$reps" --total-seconds "$((SECONDS - start))" |
  tee "$results/table.md"
report_status=${PIPESTATUS[0]}
((report_status == 0)) || exit "$report_status"
! cut -f5 "$tsv" | grep -qv '^ok$'
