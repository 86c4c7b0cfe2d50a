/* tests/programs/polybench/symm.loop (kernel symm) in plain C: C = alpha A B
 * + beta C with A symmetric (its lower triangle read), row by row, parallel
 * over a row's columns: column j of the rows above i and C[i][j]. */
#include "../harness.h"

static long M, N;
static float *C, *C0, *A, *B;
static const float alpha = 1.5f, beta = 1.2f;

static void reset(void) { memcpy(C, C0, (size_t)(M * N) * sizeof(float)); }

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_symm(long M, long N, float *restrict C, const float *restrict A, const float *restrict B) {
  for (long i = 0; i < M; ++i) {
    PARFOR
    for (long j = 0; j < N; ++j) {
      float temp2 = 0.0f;
      for (long k = 0; k < i; ++k) {
        C[k * N + j] += alpha * B[i * N + j] * A[i * M + k];
        temp2 += B[k * N + j] * A[i * M + k];
      }
      C[i * N + j] = beta * C[i * N + j] + alpha * B[i * N + j] * A[i * M + i] + alpha * temp2;
    }
  }
}

static void run(void) { kernel_symm(M, N, C, A, B); }

static double checksum(void) { return bench_sum(C, (size_t)(M * N)); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  C = bench_alloc((size_t)(M * N)), C0 = bench_alloc((size_t)(M * N));
  A = bench_alloc((size_t)(M * M)), B = bench_alloc((size_t)(M * N));
  bench_fill(C0, (size_t)(M * N), 1), bench_fill(A, (size_t)(M * M), 2);
  bench_fill(B, (size_t)(M * N), 3);
  bench_dump("in", "C", C0, 2, (long[]){M, N});
  bench_dump("in", "A", A, 2, (long[]){M, M});
  bench_dump("in", "B", B, 2, (long[]){M, N});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "C", C, 2, (long[]){M, N});
  return 0;
}
