/* tests/programs/polybench/syrk.loop (kernel syrk) in plain C: C = alpha A
 * A^T + beta C on the lower triangle, parallel over the rows, each row
 * scaled, then updated k by k along the row. */
#include "../harness.h"

static long M, N;
static float *C, *C0, *A;
static const float alpha = 1.5f, beta = 1.2f;

static void reset(void) { memcpy(C, C0, (size_t)(N * N) * sizeof(float)); }

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_syrk(long M, long N, float *restrict C, const float *restrict A) {
  PARFOR
  for (long i = 0; i < N; ++i) {
    for (long j = 0; j < i + 1; ++j)
      C[i * N + j] *= beta;
    for (long k = 0; k < M; ++k)
      for (long j = 0; j < i + 1; ++j)
        C[i * N + j] += alpha * A[i * M + k] * A[j * M + k];
  }
}

static void run(void) { kernel_syrk(M, N, C, A); }

static double checksum(void) { return bench_sum(C, (size_t)(N * N)); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  C = bench_alloc((size_t)(N * N)), C0 = bench_alloc((size_t)(N * N));
  A = bench_alloc((size_t)(N * M));
  bench_fill(C0, (size_t)(N * N), 1), bench_fill(A, (size_t)(N * M), 2);
  bench_dump("in", "C", C0, 2, (long[]){N, N});
  bench_dump("in", "A", A, 2, (long[]){N, M});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "C", C, 2, (long[]){N, N});
  return 0;
}
