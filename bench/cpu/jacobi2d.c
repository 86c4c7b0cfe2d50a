/* samples/jacobi2d.loop in plain C: `steps` 5-point Jacobi sweeps on N x N,
 * each a parallel sweep into B then a parallel copy of the interior back to
 * A. A and B are inout: both are restored before every timed run. */
#include "harness.h"

#include <string.h>

static long N, steps;
static float *A, *B, *A0, *B0;

static void reset(void) {
  memcpy(A, A0, (size_t)(N * N) * sizeof(float));
  memcpy(B, B0, (size_t)(N * N) * sizeof(float));
}

static void run(void) {
  for (long t = 0; t < steps; ++t) {
#pragma omp parallel for
    for (long i = 1; i < N - 1; ++i)
      for (long j = 1; j < N - 1; ++j)
        B[i * N + j] = 0.2f * (A[i * N + j] + A[i * N + j - 1] + A[i * N + j + 1] +
                               A[(i - 1) * N + j] + A[(i + 1) * N + j]);
#pragma omp parallel for
    for (long i = 1; i < N - 1; ++i)
      for (long j = 1; j < N - 1; ++j)
        A[i * N + j] = B[i * N + j];
  }
}

static double checksum(void) { return bench_sum(A, (size_t)(N * N)); }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1), steps = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  size_t count = (size_t)(N * N);
  A = bench_alloc(count), B = bench_alloc(count), A0 = bench_alloc(count), B0 = bench_alloc(count);
  bench_fill(A0, count, 1), bench_fill(B0, count, 2);
  bench_dump("in", "A", A0, 2, (long[]){N, N});
  bench_dump("in", "B", B0, 2, (long[]){N, N});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "A", A, 2, (long[]){N, N});
  bench_dump("out", "B", B, 2, (long[]){N, N});
  return 0;
}
