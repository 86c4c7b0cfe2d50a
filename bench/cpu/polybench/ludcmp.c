/* tests/programs/polybench/ludcmp.loop (kernel ludcmp) in plain C: A from R
 * with N + 1 on the diagonal (parallel), then LU in place without pivoting
 * and the forward and back substitutions of b, sequential as the program
 * writes them. */
#include "../harness.h"

static long N;
static float *R, *A, *b, *x, *y;

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_ludcmp(long N, const float *restrict R, float *restrict A, const float *restrict b,
              float *restrict x, float *restrict y) {
  PARFOR
  for (long i = 0; i < N; ++i)
    for (long j = 0; j < N; ++j)
      A[i * N + j] = i == j ? (float)N + 1.0f : R[i * N + j];
  for (long i = 0; i < N; ++i) {
    for (long j = 0; j < i; ++j) {
      float w = A[i * N + j];
      for (long k = 0; k < j; ++k)
        w -= A[i * N + k] * A[k * N + j];
      A[i * N + j] = w / A[j * N + j];
    }
    for (long j = i; j < N; ++j) {
      float w = A[i * N + j];
      for (long k = 0; k < i; ++k)
        w -= A[i * N + k] * A[k * N + j];
      A[i * N + j] = w;
    }
  }
  for (long i = 0; i < N; ++i) {
    float w = b[i];
    for (long j = 0; j < i; ++j)
      w -= A[i * N + j] * y[j];
    y[i] = w;
  }
  for (long ii = 0; ii < N; ++ii) {
    long i = N - 1 - ii;
    float w = y[i];
    for (long j = i + 1; j < N; ++j)
      w -= A[i * N + j] * x[j];
    x[i] = w / A[i * N + i];
  }
}

static void run(void) { kernel_ludcmp(N, R, A, b, x, y); }

static double checksum(void) { return bench_sum(x, (size_t)N); }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  R = bench_alloc((size_t)(N * N)), A = bench_alloc((size_t)(N * N));
  b = bench_alloc((size_t)N), x = bench_alloc((size_t)N), y = bench_alloc((size_t)N);
  bench_fill(R, (size_t)(N * N), 1), bench_fill(b, (size_t)N, 2);
  bench_dump("in", "R", R, 2, (long[]){N, N});
  bench_dump("in", "b", b, 1, (long[]){N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "A", A, 2, (long[]){N, N});
  bench_dump("out", "x", x, 1, (long[]){N});
  bench_dump("out", "y", y, 1, (long[]){N});
  return 0;
}
