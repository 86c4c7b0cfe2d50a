/* tests/programs/polybench/bicg.loop (kernel bicg) in plain C: s = A^T r and
 * q = A p, row by row: row i's share of s, parallel over s's elements, then
 * q[i] a sequential sum along row i. */
#include "../harness.h"

static long M, N;
static float *A, *s, *q, *p, *r;

/* The sizes and arrays as parameters, restrict, as PolyBench passes them:
 * Polly models no loop over globals that a store might alias. */
static void __attribute__((noinline))
kernel_bicg(long M, long N, const float *restrict A, float *restrict s, float *restrict q,
            const float *restrict p, const float *restrict r) {
  PARFOR
  for (long i = 0; i < M; ++i)
    s[i] = 0.0f;
  for (long i = 0; i < N; ++i) {
    q[i] = 0.0f;
    PARFOR
    for (long j = 0; j < M; ++j)
      s[j] = s[j] + r[i] * A[i * M + j];
    for (long j = 0; j < M; ++j)
      q[i] = q[i] + A[i * M + j] * p[j];
  }
}

static void run(void) { kernel_bicg(M, N, A, s, q, p, r); }

static double checksum(void) { return bench_sum(s, (size_t)M) + bench_sum(q, (size_t)N); }

int main(int argc, char **argv) {
  M = bench_arg(argc, argv, 1), N = bench_arg(argc, argv, 2);
  int reps = (int)bench_arg(argc, argv, 3);
  A = bench_alloc((size_t)(N * M)), s = bench_alloc((size_t)M), q = bench_alloc((size_t)N);
  p = bench_alloc((size_t)M), r = bench_alloc((size_t)N);
  bench_fill(A, (size_t)(N * M), 1), bench_fill(p, (size_t)M, 2), bench_fill(r, (size_t)N, 3);
  bench_dump("in", "A", A, 2, (long[]){N, M});
  bench_dump("in", "p", p, 1, (long[]){M});
  bench_dump("in", "r", r, 1, (long[]){N});
  bench_report(reps, bench_nothing, run, checksum);
  bench_dump("out", "s", s, 1, (long[]){M});
  bench_dump("out", "q", q, 1, (long[]){N});
  return 0;
}
