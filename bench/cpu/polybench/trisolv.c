/* tests/programs/polybench/trisolv.loop (kernel trisolv) in plain C: L's
 * lower triangle from R with N + 2 on the diagonal (parallel), then forward
 * substitution, sequential as the program writes it. */
#include "../harness.h"

static long N;
static float *R, *L, *x, *b;

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_trisolv(long N, const float *restrict R, float *restrict L, float *restrict x,
               const float *restrict b) {
  PARFOR
  for (long i = 0; i < N; ++i)
    for (long j = 0; j < i + 1; ++j)
      L[i * N + j] = i == j ? (float)N + 2.0f : R[i * N + j];
  for (long i = 0; i < N; ++i) {
    x[i] = b[i];
    for (long j = 0; j < i; ++j)
      x[i] -= L[i * N + j] * x[j];
    x[i] = x[i] / L[i * N + i];
  }
}

static void run(void) { kernel_trisolv(N, R, L, x, b); }

static double checksum(void) { return bench_sum(x, (size_t)N); }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  R = bench_alloc((size_t)(N * N)), L = bench_alloc((size_t)(N * N));
  x = bench_alloc((size_t)N), b = bench_alloc((size_t)N);
  bench_fill(R, (size_t)(N * N), 1), bench_fill(b, (size_t)N, 2);
  memset(L, 0, (size_t)(N * N) * sizeof(float));
  bench_dump("in", "R", R, 2, (long[]){N, N});
  bench_dump("in", "b", b, 1, (long[]){N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "x", x, 1, (long[]){N});
  return 0;
}
