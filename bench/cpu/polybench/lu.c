/* tests/programs/polybench/lu.loop (kernel lu) in plain C: A from R with
 * N + 1 on the diagonal (parallel), then LU in place without pivoting,
 * sequential as the program writes it. */
#include "../harness.h"

static long N;
static float *R, *A;

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_lu(long N, const float *restrict R, float *restrict A) {
  PARFOR
  for (long i = 0; i < N; ++i)
    for (long j = 0; j < N; ++j)
      A[i * N + j] = i == j ? (float)N + 1.0f : R[i * N + j];
  for (long i = 0; i < N; ++i) {
    for (long j = 0; j < i; ++j) {
      for (long k = 0; k < j; ++k)
        A[i * N + j] -= A[i * N + k] * A[k * N + j];
      A[i * N + j] /= A[j * N + j];
    }
    for (long j = i; j < N; ++j)
      for (long k = 0; k < i; ++k)
        A[i * N + j] -= A[i * N + k] * A[k * N + j];
  }
}

static void run(void) { kernel_lu(N, R, A); }

static double checksum(void) { return bench_sum(A, (size_t)(N * N)); }

int main(int argc, char **argv) {
  N = bench_arg(argc, argv, 1);
  int reps = (int)bench_arg(argc, argv, 2);
  R = bench_alloc((size_t)(N * N)), A = bench_alloc((size_t)(N * N));
  bench_fill(R, (size_t)(N * N), 1);
  bench_dump("in", "R", R, 2, (long[]){N, N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "A", A, 2, (long[]){N, N});
  return 0;
}
