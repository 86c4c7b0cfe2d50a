#!/usr/bin/env bash
# Everything a GPU machine held for a few minutes should run, in one command
# (about 10 minutes, so that one run fits a short loan of the machine): the
# correctness table
# (scripts/gpu_check.sh, its checks in parallel, none started after a quarter
# of the budget), then the benchmark (bench/gpu/run.sh: the peers, then loopc) with
# the time left before BUDGET seconds (default 560). Everything is written
# under $OUT: gpu_check.txt (the device, then the table) and bench-gpu/
# (table.md, the peers' and loopc's raw output); the end of the output repeats
# both tables' summaries. Exits 1 when a check or a benchmark case failed.
# CHECK_TIMEOUT (default BUDGET / 8) caps each check; CASES picks benchmark
# cases by name (bench/gpu/run.sh). PROFILE_CASES, when set, then profiles the
# cases of bench/gpu/profile.sh it matches (Nsight Compute and the machine
# instructions by opcode, no tuning) into $OUT/profile/, within the budget.
#
# Prepared on a machine without a GPU (docs/gpu.md, "Everything in one command"):
#   scripts/build-static.sh; cmake --build build-static --target loopc-runtime-smoke
#   LOOPC_EXPORT_RANDOM_PROGRAMS=build-static/random-programs build/tests/test_random_programs
#   tests/embedding/run.sh build build/embedding-scratch &&
#     cp build/embedding-scratch/build/embedding_check build/embedding-scratch/build/embedding_chain \
#       build/embedding-scratch/sample/matmul_app build-static/
#   cp -r ../shared/anchors bench/anchors
# then run on the GPU machine with build-static/loopc, build-static/libdevice.10.bc,
# build-static/runtime/loopc-runtime-smoke, build-static/random-programs,
# build-static/embedding_check and bench/anchors, with LOOPC_COMMIT set to the commit the binary was built from:
#   LOOPC_COMMIT=abc1234 scripts/gpu_session.sh
set -uo pipefail
cd "$(dirname "$0")/.."

budget=${BUDGET:-560}
start=$SECONDS
out=${OUT:-$(mktemp -d)}
echo "gpu_session.sh: writing to $out"

{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,memory.used \
    --format=csv 2>&1
  echo
  DEADLINE=$((budget / 4)) CHECK_TIMEOUT=${CHECK_TIMEOUT:-$((budget / 8))} scripts/gpu_check.sh
} >"$out/gpu_check.txt" 2>&1
check_status=$?
echo "gpu_session.sh: gpu_check.sh exit $check_status after $((SECONDS - start)) s"
grep -E 'FAIL|generated programs|all GPU checks passed|FAILED' "$out/gpu_check.txt" | head -40

# run.sh stops starting cases at its DEADLINE, counted from its own start,
# and each case ends by then; the table takes seconds.
remaining=$((budget - (SECONDS - start)))
DEADLINE=$((remaining - 20)) ANCHORS_TIMEOUT=$((remaining / 3)) bench/gpu/run.sh >/dev/null \
  2>"$out/bench-gpu.log"
bench_status=$?
echo "gpu_session.sh: bench/gpu/run.sh exit $bench_status after $((SECONDS - start)) s"
cat "$out/bench-gpu/table.md" 2>/dev/null || tail -20 "$out/bench-gpu.log"
if [[ -n ${PROFILE_CASES:-} ]]; then
  remaining=$((budget - (SECONDS - start)))
  mkdir -p "$out/profile"
  OUT=$out/profile TUNE=0 CASES=$PROFILE_CASES NCU_TIMEOUT=$((remaining / 4)) \
    timeout -k 5 "$remaining" bench/gpu/profile.sh
  echo "gpu_session.sh: bench/gpu/profile.sh exit $? after $((SECONDS - start)) s"
fi
((check_status == 0 && bench_status == 0))
