/* samples/transpose.loop in plain C: B = A^T, A of M x N, B of N x M, both
 * row-major; the same loop order (rows of B outer), parallel over them. */
#include "harness.h"

static long M, N;
static float *A, *B;

static void run(void) {
#pragma omp parallel for
  for (long i = 0; i < N; ++i)
    for (long j = 0; j < M; ++j)
      B[i * M + j] = A[j * N + i];
}

static double checksum(void) { return bench_sum(B, (size_t)(M * N)); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  A = bench_alloc((size_t)(M * N)), B = bench_alloc((size_t)(M * N));
  bench_fill(A, (size_t)(M * N), 1), bench_fill(B, (size_t)(M * N), 2);
  bench_dump("in", "A", A, 2, (long[]){M, N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "B", B, 2, (long[]){N, M});
  return 0;
}
