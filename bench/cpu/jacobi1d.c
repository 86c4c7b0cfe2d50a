/* samples/jacobi1d.loop in plain C: `steps` 3-point Jacobi sweeps on N
 * floats, each a sweep into B then a copy of the interior back to A,
 * sequential (at N = 4000 a sweep takes about a microsecond, less than a
 * parallel region's start). A and B are inout: both are restored before
 * every timed run. */
#include "harness.h"

#include <string.h>

static long N, steps;
static float *A, *B, *A0, *B0;

static void reset(void) {
  memcpy(A, A0, (size_t)N * sizeof(float));
  memcpy(B, B0, (size_t)N * sizeof(float));
}

static void run(void) {
  for (long t = 0; t < steps; ++t) {
    for (long i = 1; i < N - 1; ++i)
      B[i] = (A[i - 1] + A[i] + A[i + 1]) / 3.0f;
    for (long i = 1; i < N - 1; ++i)
      A[i] = B[i];
  }
}

static double checksum(void) { return bench_sum(A, (size_t)N); }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1), steps = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  A = bench_alloc((size_t)N), B = bench_alloc((size_t)N);
  A0 = bench_alloc((size_t)N), B0 = bench_alloc((size_t)N);
  bench_fill(A0, (size_t)N, 1), bench_fill(B0, (size_t)N, 2);
  bench_dump("in", "A", A0, 1, (long[]){N});
  bench_dump("in", "B", B0, 1, (long[]){N});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "A", A, 1, (long[]){N});
  bench_dump("out", "B", B, 1, (long[]){N});
  return 0;
}
