#!/usr/bin/env bash
# What bounds checks cost on the CPU JIT: each case of the CPU benchmark
# (cases.sh) run checked (the default) and with `--unsafe`, alternated for ROUNDS
# rounds (default 3) of `loopc run --device cpu --repeat REPS` (default 5),
# the median of the rounds' medians for each; the ratio is checked / unchecked
# (above 1: the checks cost). "indices checked" counts the program's indices
# no proof covers at those sizes (`loopc explain --remarks`),
# whose checks stay in the code; 0 means the checked code is the unchecked
# code. (A check privatize_combines makes before a private copy counts too.)
# Prints a markdown table and the geometric mean of the ratios.
#
# Usage: bench/cpu/bounds_checks.sh [LOOPC] (default build/loopc); CASES, an
# extended regular expression, runs only the cases whose name matches it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
loopc=${1:-$root/build/loopc}
reps=${REPS:-5}
rounds=${ROUNDS:-3}

if [[ ! -x $loopc ]]; then
  echo "bounds_checks.sh: no loopc binary at $loopc (pass its path)" >&2
  exit 2
fi
# shellcheck source=bench/cpu/cases.sh
source "$root/bench/cpu/cases.sh"

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "Device: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), $(nproc) cores (nproc)"
echo "Date: $(date -u +%Y-%m-%d) · commit: $commit · $rounds rounds of $reps runs, alternated"
echo "Load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| kernel | sizes | indices checked | unchecked ms | checked ms | checked / unchecked |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

ratios=()
for entry in "${cases[@]}"; do
  read_case "$entry"
  [[ -n ${CASES:-} && ! $name =~ $CASES ]] && continue
  # The sizes explain takes are the kernel's sizes, not its scalars.
  explain_sets=()
  for value in $values; do
    name_only=${value%%=*}
    [[ $name_only =~ ^[A-Z] ]] && explain_sets+=(--set "$value")
  done
  checked_indices=$("$loopc" explain "$root/$sample" "${kernel_args[@]}" --target cpu --remarks \
    "${explain_sets[@]}" "${option_args[@]}" 2>&1 | grep -c "checked at run time" || true)

  time_of() {
    "$loopc" run "$root/$sample" "${kernel_args[@]}" --device cpu --repeat "$reps" \
      "${set_args[@]}" "${option_args[@]}" "$@" 2>&1 |
      sed -n "s/.* ran on cpu[^)]*)* in \([0-9.]*\) ms.*/\1/p"
  }
  unchecked=() checked=()
  # Which runs first alternates (the second of two runs was measured a few
  # percent slower, the same code both ways).
  for ((round = 0; round < rounds; ++round)); do
    if ((round % 2 == 0)); then
      unchecked+=("$(time_of --unsafe)")
      checked+=("$(time_of)")
    else
      checked+=("$(time_of)")
      unchecked+=("$(time_of --unsafe)")
    fi
  done
  unchecked_ms=$(printf '%s\n' "${unchecked[@]}" | median)
  checked_ms=$(printf '%s\n' "${checked[@]}" | median)
  ratio=$(awk -v c="$checked_ms" -v u="$unchecked_ms" 'BEGIN { printf "%.3f", c / u }')
  ratios+=("$ratio")
  echo "| $name | $sizes | $checked_indices | $unchecked_ms | $checked_ms | $ratio |"
done

echo
printf '%s\n' "${ratios[@]}" |
  awk '{ s += log($1); n++ } END { if (n) printf "Geometric mean of checked / unchecked: %.3f\n", exp(s / n) }'
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
