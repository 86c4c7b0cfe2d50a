/* samples/mv.loop in plain C: y = A x, A of M x N row-major, parallel over
 * rows, a sequential float reduction along each row. */
#include "harness.h"

static long M, N;
static float *A, *x, *y;

static void run(void) {
#pragma omp parallel for
  for (long i = 0; i < M; ++i) {
    float sum = 0.0f;
    for (long j = 0; j < N; ++j)
      sum += A[i * N + j] * x[j];
    y[i] = sum;
  }
}

static double checksum(void) { return bench_sum(y, (size_t)M); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  A = bench_alloc((size_t)(M * N)), x = bench_alloc((size_t)N), y = bench_alloc((size_t)M);
  bench_fill(A, (size_t)(M * N), 1), bench_fill(x, (size_t)N, 2), bench_fill(y, (size_t)M, 3);
  bench_dump("in", "A", A, 2, (long[]){M, N});
  bench_dump("in", "x", x, 1, (long[]){N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "y", y, 1, (long[]){M});
  return 0;
}
