/* tests/programs/polybench/trmm.loop (kernel trmm) in plain C: B = alpha *
 * A^T B with A unit lower triangular, row by row, parallel over a row's
 * columns. */
#include "../harness.h"

static long M, N;
static float *A, *B, *B0;
static const float alpha = 1.5f;

static void reset(void) { memcpy(B, B0, (size_t)(M * N) * sizeof(float)); }

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_trmm(long M, long N, const float *restrict A, float *restrict B) {
  for (long i = 0; i < M; ++i) {
    PARFOR
    for (long j = 0; j < N; ++j) {
      for (long k = i + 1; k < M; ++k)
        B[i * N + j] += A[k * M + i] * B[k * N + j];
      B[i * N + j] = alpha * B[i * N + j];
    }
  }
}

static void run(void) { kernel_trmm(M, N, A, B); }

static double checksum(void) { return bench_sum(B, (size_t)(M * N)); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  A = bench_alloc((size_t)(M * M)), B = bench_alloc((size_t)(M * N));
  B0 = bench_alloc((size_t)(M * N));
  bench_fill(A, (size_t)(M * M), 1), bench_fill(B0, (size_t)(M * N), 2);
  bench_dump("in", "A", A, 2, (long[]){M, M});
  bench_dump("in", "B", B0, 2, (long[]){M, N});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "B", B, 2, (long[]){M, N});
  return 0;
}
