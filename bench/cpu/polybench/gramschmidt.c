/* tests/programs/polybench/gramschmidt.loop (kernel gramschmidt) in plain C:
 * A from X plus 4 on the diagonal (parallel), then modified Gram-Schmidt,
 * column by column: the norm (a sequential sum), Q's column (parallel), and
 * R's row with the update of the columns to its right (parallel over them).
 * At PolyBench's LARGE sizes M < N: past column M, what is left of A's
 * columns is rounding error, normalized (finite on these inputs). */
#include "../harness.h"
#include <math.h>

static long M, N;
static float *X, *A, *R, *Q;

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_gramschmidt(long M, long N, const float *restrict X, float *restrict A, float *restrict R,
                   float *restrict Q) {
  PARFOR
  for (long i = 0; i < M; ++i)
    for (long j = 0; j < N; ++j)
      A[i * N + j] = i == j ? X[i * N + j] + 4.0f : X[i * N + j];
  for (long k = 0; k < N; ++k) {
    float nrm = 0.0f;
    for (long i = 0; i < M; ++i)
      nrm += A[i * N + k] * A[i * N + k];
    R[k * N + k] = sqrtf(nrm);
    PARFOR
    for (long i = 0; i < M; ++i)
      Q[i * N + k] = A[i * N + k] / R[k * N + k];
    PARFOR
    for (long j = k + 1; j < N; ++j) {
      R[k * N + j] = 0.0f;
      for (long i = 0; i < M; ++i)
        R[k * N + j] += Q[i * N + k] * A[i * N + j];
      for (long i = 0; i < M; ++i)
        A[i * N + j] = A[i * N + j] - Q[i * N + k] * R[k * N + j];
    }
  }
}

static void run(void) { kernel_gramschmidt(M, N, X, A, R, Q); }

static double checksum(void) { return bench_sum(R, (size_t)(N * N)); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  X = bench_alloc((size_t)(M * N)), A = bench_alloc((size_t)(M * N));
  R = bench_alloc((size_t)(N * N)), Q = bench_alloc((size_t)(M * N));
  bench_fill(X, (size_t)(M * N), 1);
  /* R's lower triangle is never written: zero, as an out array starts. */
  memset(R, 0, (size_t)(N * N) * sizeof(float));
  bench_dump("in", "X", X, 2, (long[]){M, N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "A", A, 2, (long[]){M, N});
  bench_dump("out", "R", R, 2, (long[]){N, N});
  bench_dump("out", "Q", Q, 2, (long[]){M, N});
  return 0;
}
