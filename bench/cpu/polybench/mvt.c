/* tests/programs/polybench/mvt.loop (kernel mvt) in plain C: x1 += A y_1
 * and x2 += A^T y_2, each parallel over its outputs, sequential sums. */
#include "../harness.h"

static long N;
static float *x1, *x2, *x10, *x20, *y_1, *y_2, *A;

static void reset(void) {
  memcpy(x1, x10, (size_t)N * sizeof(float));
  memcpy(x2, x20, (size_t)N * sizeof(float));
}

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_mvt(long N, float *restrict x1, float *restrict x2, const float *restrict y_1,
           const float *restrict y_2, const float *restrict A) {
  PARFOR
  for (long i = 0; i < N; ++i)
    for (long j = 0; j < N; ++j)
      x1[i] = x1[i] + A[i * N + j] * y_1[j];
  PARFOR
  for (long i = 0; i < N; ++i)
    for (long j = 0; j < N; ++j)
      x2[i] = x2[i] + A[j * N + i] * y_2[j];
}

static void run(void) { kernel_mvt(N, x1, x2, y_1, y_2, A); }

static double checksum(void) { return bench_sum(x1, (size_t)N) + bench_sum(x2, (size_t)N); }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  x1 = bench_alloc((size_t)N), x2 = bench_alloc((size_t)N);
  x10 = bench_alloc((size_t)N), x20 = bench_alloc((size_t)N);
  y_1 = bench_alloc((size_t)N), y_2 = bench_alloc((size_t)N);
  A = bench_alloc((size_t)(N * N));
  bench_fill(x10, (size_t)N, 1), bench_fill(x20, (size_t)N, 2);
  bench_fill(y_1, (size_t)N, 3), bench_fill(y_2, (size_t)N, 4);
  bench_fill(A, (size_t)(N * N), 5);
  bench_dump("in", "x1", x10, 1, (long[]){N});
  bench_dump("in", "x2", x20, 1, (long[]){N});
  bench_dump("in", "y_1", y_1, 1, (long[]){N});
  bench_dump("in", "y_2", y_2, 1, (long[]){N});
  bench_dump("in", "A", A, 2, (long[]){N, N});
  bench_report(reps, reset, run, checksum);
  bench_dump("out", "x1", x1, 1, (long[]){N});
  bench_dump("out", "x2", x2, 1, (long[]){N});
  return 0;
}
