/* tests/programs/polybench/cholesky.loop (kernel cholesky) in plain C: A
 * from R, symmetrized, with N + 1 on the diagonal (parallel), then Cholesky
 * in place on the lower triangle, sequential as the program writes it. */
#include "../harness.h"
#include <math.h>

static long N;
static float *R, *A;

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_cholesky(long N, const float *restrict R, float *restrict A) {
  PARFOR
  for (long i = 0; i < N; ++i)
    for (long j = 0; j < N; ++j)
      A[i * N + j] = i == j ? (float)N + 1.0f : 0.5f * (R[i * N + j] + R[j * N + i]);
  for (long i = 0; i < N; ++i) {
    for (long j = 0; j < i; ++j) {
      for (long k = 0; k < j; ++k)
        A[i * N + j] -= A[i * N + k] * A[j * N + k];
      A[i * N + j] /= A[j * N + j];
    }
    for (long k = 0; k < i; ++k)
      A[i * N + i] -= A[i * N + k] * A[i * N + k];
    A[i * N + i] = sqrtf(A[i * N + i]);
  }
}

static void run(void) { kernel_cholesky(N, R, A); }

static double checksum(void) { return bench_sum(A, (size_t)(N * N)); }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  R = bench_alloc((size_t)(N * N)), A = bench_alloc((size_t)(N * N));
  bench_fill(R, (size_t)(N * N), 1);
  bench_dump("in", "R", R, 2, (long[]){N, N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "A", A, 2, (long[]){N, N});
  return 0;
}
