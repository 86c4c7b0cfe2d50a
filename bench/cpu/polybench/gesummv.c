/* tests/programs/polybench/gesummv.loop (kernel gesummv) in plain C: y =
 * alpha A x + beta B x, parallel over the rows, both sums of a row in one
 * sequential loop. */
#include "../harness.h"

static long N;
static float *A, *B, *tmp, *x, *y;
static const float alpha = 1.5f, beta = 1.2f;

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_gesummv(long N, const float *restrict A, const float *restrict B, float *restrict tmp,
               const float *restrict x, float *restrict y) {
  PARFOR
  for (long i = 0; i < N; ++i) {
    tmp[i] = 0.0f;
    y[i] = 0.0f;
    for (long j = 0; j < N; ++j) {
      tmp[i] = A[i * N + j] * x[j] + tmp[i];
      y[i] = B[i * N + j] * x[j] + y[i];
    }
    y[i] = alpha * tmp[i] + beta * y[i];
  }
}

static void run(void) { kernel_gesummv(N, A, B, tmp, x, y); }

static double checksum(void) { return bench_sum(y, (size_t)N); }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  A = bench_alloc((size_t)(N * N)), B = bench_alloc((size_t)(N * N));
  tmp = bench_alloc((size_t)N), x = bench_alloc((size_t)N), y = bench_alloc((size_t)N);
  bench_fill(A, (size_t)(N * N), 1), bench_fill(B, (size_t)(N * N), 2);
  bench_fill(x, (size_t)N, 3);
  bench_dump("in", "A", A, 2, (long[]){N, N});
  bench_dump("in", "B", B, 2, (long[]){N, N});
  bench_dump("in", "x", x, 1, (long[]){N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "tmp", tmp, 1, (long[]){N});
  bench_dump("out", "y", y, 1, (long[]){N});
  return 0;
}
