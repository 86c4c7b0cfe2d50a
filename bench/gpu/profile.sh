#!/usr/bin/env bash
# Why a kernel runs at the speed bench/gpu/run.sh reports, in one device call:
# `loopc tune` searches the optimizations' choices for each tuned case on this
# GPU (docs/tuning.md: which choices beat the defaults, and by how much), then
# Nsight Compute profiles the first 6 launches of each profiled case (speed of
# light, occupancy, launch statistics, memory and warp-state sections, with
# --clock-control none: the card's clocks are left as they are).
#
# Usage: bench/gpu/profile.sh [LOOPC]   (default build-static/loopc)
# Writes tune.txt, ncu.txt and sass.txt to $OUT (else a temporary folder) and
# prints a summary. sass.txt counts the machine instructions of each profiled
# case's kernels by opcode (ptxas for the GPU's architecture, then cuobjdump),
# beside what the performance model counted. Environment: TUNE_TIMEOUT and
# NCU_TIMEOUT cap each case (60, 40 s); CASES, an extended regular
# expression, keeps the cases whose line (sample|kernel|sizes|options) matches
# it; TUNE=0 leaves the tuning out.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
loopc=${1:-build-static/loopc}
out=${OUT:-$(mktemp -d)}
tune_timeout=${TUNE_TIMEOUT:-60}
ncu_timeout=${NCU_TIMEOUT:-40}
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n1)

# sample | kernel | --set values | further loopc options
# The cases are what the last benchmark left unexplained (docs/benchmarks.md):
# matmul's tile size at other sizes, cnn_conv's staging, the in-order walk of
# sum_and_max's user operator, and the kernels after prefix_sum's first; and
# the copies into shared memory in flight together, which the performance
# model predicts 1.7-3.2x faster (tune prints each candidate's prediction
# beside its time and leaves out those predicted 1.5x slower than the best).
tuned=(
  "matmul|matmul|M=2048 N=2048 K=2048|"
  "matmul|matmul|M=1000 N=1000 K=1000|"
  "cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=3|"
  "cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=1024 W=1024 K=3|"
)
profiled=(
  "sum_max|sum_and_max|N=268435456|"
  "scan|prefix_sum|N=268435456|"
  "cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=3|"
  "cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=3|--pass-param register_tile=8 --skip-pass stage_shared"
  "matmul|matmul|M=2048 N=2048 K=2048|"
  "matmul|matmul|M=2048 N=2048 K=2048|--pass-param copies_in_flight=8"
  "matmul|matmul|M=2048 N=2048 K=2048|--pass-param pipeline_depth=2"
  "cnn_conv|cnn_conv_valid|Ic=64 Oc=64 H=256 W=256 K=3|--pass-param copies_in_flight=8"
)

if [[ -n ${CASES:-} ]]; then
  mapfile -t tuned < <(printf '%s\n' "${tuned[@]}" | grep -E -- "$CASES")
  mapfile -t profiled < <(printf '%s\n' "${profiled[@]}" | grep -E -- "$CASES")
fi
[[ ${TUNE:-1} == 0 ]] && tuned=()

# Splits case $1 into the arrays command_args (file, kernel, --set) and
# option_args.
read_case() {
  local sample kernel values options
  IFS='|' read -r sample kernel values options <<<"$1"
  command_args=("samples/$sample.loop" --kernel "$kernel")
  for value in $values; do command_args+=(--set "$value"); done
  read -r -a option_args <<<"$options"
}

: >"$out/tune.txt"
for entry in "${tuned[@]}"; do
  read_case "$entry"
  echo "== tune ${command_args[*]} ${option_args[*]}" >>"$out/tune.txt"
  timeout -k 5 "$tune_timeout" "$loopc" tune "${command_args[@]}" "${option_args[@]}" --device gpu \
    --tuning-cache "$out/tuning.json" >>"$out/tune.txt" 2>&1
  echo "(exit $?)" >>"$out/tune.txt"
done

: >"$out/sass.txt"
ptxas=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null | head -n1)
cuobjdump=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null | head -n1)
arch=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d .)
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)
for entry in "${profiled[@]}"; do
  [[ -n $ptxas && -n $cuobjdump ]] || break
  read_case "$entry"
  scratch=$(mktemp -d)
  echo "== sass ${command_args[*]} ${option_args[*]} ($arch)" >>"$out/sass.txt"
  "$loopc" compile "${command_args[0]}" --kernel "${command_args[2]}" "${option_args[@]}" \
    --emit ptx -o "$scratch/kernel.ptx" >>"$out/sass.txt" 2>&1 &&
    "$ptxas" -arch="$arch" -v "$scratch/kernel.ptx" -o "$scratch/kernel.cubin" 2>&1 |
    grep -E 'registers|spill' >>"$out/sass.txt" &&
    "$cuobjdump" --dump-sass "$scratch/kernel.cubin" |
    sed -n 's|^ */\*[0-9a-f]*\*/ *\(@!*U*P[0-9T]* *\)*\([A-Z0-9_]*\).*|\2|p' | sed 's/\..*//' |
      sort | uniq -c | sort -rn | head -25 >>"$out/sass.txt"
  "$loopc" explain "${command_args[@]}" "${option_args[@]}" --perf \
    ${gpu_name:+--device-model "$gpu_name"} 2>&1 |
    grep -E '^kernel|work|per block|predicted' >>"$out/sass.txt"
  rm -rf "$scratch"
done

: >"$out/ncu.txt"
if [[ -z $ncu ]]; then
  echo "profile.sh: no ncu found" | tee "$out/ncu.txt"
else
  for entry in "${profiled[@]}"; do
    read_case "$entry"
    echo "== ncu ${command_args[*]} ${option_args[*]}" >>"$out/ncu.txt"
    timeout -k 5 "$ncu_timeout" "$ncu" --clock-control none --launch-count 6 \
      --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
      "$loopc" bench "${command_args[@]}" "${option_args[@]}" --device gpu --repeat 1 \
      >>"$out/ncu.txt" 2>&1
    echo "(exit $?)" >>"$out/ncu.txt"
  done
fi

grep -E '^==|the defaults:|not timed|^tuned kernel|\(exit' "$out/tune.txt"
grep -E '^==|^  [A-Za-z_0-9.$]+ \(|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Shared Memory Configuration Size|Dynamic Shared|Static Shared|Issue Slots Busy|No Eligible|\(exit' \
  "$out/ncu.txt"
