/* tests/programs/polybench/atax.loop (kernel atax) in plain C: y = A^T (A x),
 * row by row: tmp[i] a sequential sum along row i, then row i's share of y,
 * parallel over y's elements. */
#include "../harness.h"

static long M, N;
static float *A, *x, *y, *tmp;

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_atax(long M, long N, const float *restrict A, const float *restrict x, float *restrict y,
            float *restrict tmp) {
  PARFOR
  for (long i = 0; i < N; ++i)
    y[i] = 0.0f;
  for (long i = 0; i < M; ++i) {
    tmp[i] = 0.0f;
    for (long j = 0; j < N; ++j)
      tmp[i] = tmp[i] + A[i * N + j] * x[j];
    PARFOR
    for (long j = 0; j < N; ++j)
      y[j] = y[j] + A[i * N + j] * tmp[i];
  }
}

static void run(void) { kernel_atax(M, N, A, x, y, tmp); }

static double checksum(void) { return bench_sum(y, (size_t)N); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  A = bench_alloc((size_t)(M * N)), x = bench_alloc((size_t)N);
  y = bench_alloc((size_t)N), tmp = bench_alloc((size_t)M);
  bench_fill(A, (size_t)(M * N), 1), bench_fill(x, (size_t)N, 2);
  bench_dump("in", "A", A, 2, (long[]){M, N});
  bench_dump("in", "x", x, 1, (long[]){N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "y", y, 1, (long[]){N});
  bench_dump("out", "tmp", tmp, 1, (long[]){M});
  return 0;
}
