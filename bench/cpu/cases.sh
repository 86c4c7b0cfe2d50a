# shellcheck shell=bash
# The CPU benchmark's cases, read by run.sh and bounds_checks.sh (sourced:
# defines `cases` and `read_case`).
# name | program[:kernel] (in samples/, or a path from the root) | loopc --set
# values | C arguments (before REPS) | sizes shown [| further loopc options]
# A case repeated with a pass left out measures what the pass brings against
# the same C. launch's host loop is kept (hoist_independent_parfors would make its steps
# one launch: each point owns its element), as it measures launches.
cases=(
  "matmul|matmul.loop|M=1024 N=1024 K=1024|1024 1024 1024|M = N = K = 1024"
  "mv|mv.loop|M=4096 N=4096|4096 4096|M = N = 4096"
  "mv_transposed|mv_transposed.loop:mv_transposed_via_linalg|M=4096 N=4096|4096 4096|M = N = 4096, via transpose + gemv"
  "dot|dot.loop|N=16777216|16777216|N = 2^24"
  "sum_and_max|sum_max.loop:sum_and_max|N=16777216|16777216|N = 2^24, a sum and a maximum"
  "transpose|transpose.loop|M=4096 N=4096|4096 4096|M = N = 4096"
  "conv2d_5x5|conv2d_5x5.loop|H=2048 W=2048|2048 2048|H = W = 2048"
  "cnn_conv_same|cnn_conv.loop:cnn_conv_same|Ic=32 Oc=32 H=256 W=256 K=3|32 32 256 256 3|32 -> 32 channels, 256^2, 3 x 3, padded"
  "cnn_conv_same|cnn_conv.loop:cnn_conv_same|Ic=32 Oc=32 H=256 W=256 K=3|32 32 256 256 3|the same, one nest (no partition_borders)|--skip-pass partition_borders"
  "jacobi2d|jacobi2d.loop|N=4096 steps=10|4096 10|N = 4096, 10 steps"
  "softmax|softmax.loop|R=4096 C=1024|4096 1024|R = 4096, C = 1024"
  "sqdist|sqdist.loop|M=2048 N=2048 K=64|2048 2048 64|M = N = 2048, K = 64"
  "nbody|nbody.loop|N=8192 dt=0.01 softening=0.1|8192|N = 8192"
  "histogram|histogram.loop|N=16777216 B=256 lo=-1 hi=1|16777216 256|N = 2^24, 256 bins"
  "prefix_sum|scan.loop|N=16777216|16777216|N = 2^24"
  "launch|bench/cpu/launch.loop|N=1 steps=10000|1 10000|N = 1, 10000 launches|--skip-pass hoist_independent_parfors"
  "launch|bench/cpu/launch.loop|N=64 steps=10000|64 10000|N = 64, 10000 launches|--skip-pass hoist_independent_parfors"
  "launch|bench/cpu/launch.loop|N=4000 steps=10000|4000 10000|N = 4000, 10000 launches|--skip-pass hoist_independent_parfors"
  "jacobi1d|jacobi1d.loop|N=4000 steps=1000|4000 1000|N = 4000, 1000 steps"
  "durbin|bench/cpu/durbin.loop|N=4000|4000|N = 4000"
  "nussinov|bench/cpu/nussinov.loop|N=2500|2500|N = 2500"
)

# Reads one entry of `cases` into name, sample (a path from the root),
# values, c_args, sizes and the loopc arguments kernel_args (--kernel),
# set_args (--set) and option_args (the further options).
read_case() {
  local options
  IFS='|' read -r name sample values c_args sizes options <<<"$1"
  kernel_args=()
  if [[ $sample == *:* ]]; then
    kernel_args=(--kernel "${sample#*:}")
    sample=${sample%%:*}
  fi
  [[ $sample == */* ]] || sample=samples/$sample
  set_args=()
  for value in $values; do set_args+=(--set "$value"); done
  # shellcheck disable=SC2206 # a list of options
  option_args=($options)
}
