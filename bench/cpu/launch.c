/* bench/cpu/launch.loop in plain C: `steps` sweeps adding 1 to the N
 * elements of x, each an OpenMP parallel loop, so the time per step is
 * OpenMP's launch cost (its threads spin between parallel regions) plus the
 * sweep. x is inout: restored before every timed run. */
#include "harness.h"

#include <string.h>

static long N, steps;
static float *x, *x0;

static void reset(void) { memcpy(x, x0, (size_t)N * sizeof(float)); }

static void run(void) {
  for (long t = 0; t < steps; ++t)
#pragma omp parallel for
    for (long i = 0; i < N; ++i)
      x[i] = x[i] + 1.0f;
}

static double checksum(void) { return bench_sum(x, (size_t)N); }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1), steps = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  x = bench_alloc((size_t)N), x0 = bench_alloc((size_t)N);
  bench_fill(x0, (size_t)N, 1);
  bench_dump("in", "x", x0, 1, (long[]){N});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "x", x, 1, (long[]){N});
  return 0;
}
