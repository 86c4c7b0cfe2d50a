/* samples/mv_transposed.loop in plain C: y = A^T x, A of M x N row-major,
 * parallel over the outputs, a sequential float reduction down each column.
 * The loopc side runs mv_transposed_via_linalg: a transpose into a local
 * array, then gemv (fused by fuse_producers). */
#include "harness.h"

static long M, N;
static float *A, *x, *y;

static void run(void) {
#pragma omp parallel for
  for (long j = 0; j < N; ++j) {
    float sum = 0.0f;
    for (long i = 0; i < M; ++i)
      sum += A[i * N + j] * x[i];
    y[j] = sum;
  }
}

static double checksum(void) { return bench_sum(y, (size_t)N); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  A = bench_alloc((size_t)(M * N)), x = bench_alloc((size_t)M), y = bench_alloc((size_t)N);
  bench_fill(A, (size_t)(M * N), 1), bench_fill(x, (size_t)M, 2), bench_fill(y, (size_t)N, 3);
  bench_dump("in", "A", A, 2, (long[]){M, N});
  bench_dump("in", "x", x, 1, (long[]){M});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "y", y, 1, (long[]){N});
  return 0;
}
