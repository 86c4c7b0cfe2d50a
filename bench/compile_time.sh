#!/usr/bin/env bash
# Compile time of every sample's last kernel (what `loopc compile` takes by
# default): `--emit ptx --gpu sm_90` (the GPU's code, every variant the host
# may choose between, as a program embedding it gets) and `--emit object`
# (the CPU's),
# wall time from the process's start to the output written, the best of REPS
# runs (default 5). Prints a Markdown table with the machine, the date and the
# commit. LOOPC (default build/loopc) names the binary.
#
#   bench/compile_time.sh            # every sample
#   REPS=9 bench/compile_time.sh     # more runs each
set -euo pipefail
cd "$(dirname "$0")/.."

loopc=${LOOPC:-build/loopc}
reps=${REPS:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The best of `reps` wall times of the command, in milliseconds.
best_ms() {
  local best=""
  for ((i = 0; i < reps; ++i)); do
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s%N)
    local ms=$(((end - start) / 1000000))
    if [[ -z $best || $ms -lt $best ]]; then best=$ms; fi
  done
  echo "$best"
}

echo "compile time, best of $reps: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) threads;" \
  "$(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo
echo "| sample | kernel | PTX (sm_90) ms | CPU object ms |"
echo "| --- | --- | ---: | ---: |"
for file in samples/*.loop; do
  kernel=$(sed -n 's/^kernel \([A-Za-z_0-9]*\).*/\1/p' "$file" | tail -n 1)
  ptx=$(best_ms "$loopc" compile "$file" --kernel "$kernel" --emit ptx --gpu sm_90 -o "$out/kernel.ptx")
  object=$(best_ms "$loopc" compile "$file" --kernel "$kernel" --emit object -o "$out/kernel.o")
  echo "| $(basename "$file" .loop) | $kernel | $ptx | $object |"
done
