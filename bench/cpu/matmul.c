/* samples/matmul.loop in plain C: C = A B, A of M x K, B of K x N, row-major,
 * the same loop order (i, j, then the k reduction), parallel over i. */
#include "harness.h"

static long M, N, K;
static float *A, *B, *C;

static void run(void) {
#pragma omp parallel for
  for (long i = 0; i < M; ++i)
    for (long j = 0; j < N; ++j) {
      float sum = 0.0f;
      for (long k = 0; k < K; ++k)
        sum += A[i * K + k] * B[k * N + j];
      C[i * N + j] = sum;
    }
}

static double checksum(void) { return bench_sum(C, (size_t)(M * N)); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2), K = bench_arg(argc, argv, 3);
  int reps = (int)bench_arg(argc, argv, 4);
  A = bench_alloc((size_t)(M * K)), B = bench_alloc((size_t)(K * N)),
  C = bench_alloc((size_t)(M * N));
  bench_fill(A, (size_t)(M * K), 1), bench_fill(B, (size_t)(K * N), 2),
      bench_fill(C, (size_t)(M * N), 3);
  bench_dump("in", "A", A, 2, (long[]){M, K});
  bench_dump("in", "B", B, 2, (long[]){K, N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "C", C, 2, (long[]){M, N});
  return 0;
}
